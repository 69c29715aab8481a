// dlx storage add-user USER... | check   [--storage-root DIR]
// The administrator's side of the storage layout (docs/security.md): `add-user` (root) makes
// <storage_root>/<user> owned by the user, mode 0750, so that a storage root of mode 0755 needs no
// user to create anything in it and nobody can create a directory in another's name; `check`
// lists the entries named after a user that are not that user's own directory (made in their
// place by someone else, linked, or writable by others), which dlx refuses to submit into.
#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "commands.hpp"
#include "dlx/store/user_directories.hpp"
#include "experiment_locator.hpp"
#include "options.hpp"

namespace dlx::cli {

namespace {

std::string storage_root_of(const boost::program_options::variables_map& values) {
  if (values.count("storage-root")) return values["storage-root"].as<std::string>();
  if (const char* from_environment = std::getenv("DLX_STORAGE_ROOT"); from_environment && *from_environment) {
    return from_environment;
  }
  if (auto root = plugstack_argument("storage_root"); !root.empty()) return root;
  throw UsageError("cannot find the storage root: give --storage-root DIR, set DLX_STORAGE_ROOT, or run this "
                   "where `scontrol show config` names the plugstack.conf with dlx's line");
}

}  // namespace

int run_storage(const Arguments& arguments) {
  namespace po = boost::program_options;
  po::options_description options("dlx storage add-user USER... | check [options]");
  options.add_options()("storage-root", po::value<std::string>(), "the plugin's storage_root (default: plugstack.conf)")(
      "action", po::value<std::string>()->required(), "add-user or check")(
      "users", po::value<std::vector<std::string>>()->default_value({}, ""), "users");
  po::positional_options_description positional;
  positional.add("action", 1).add("users", -1);
  const auto values = parse_options(arguments, options, positional);
  const std::string action = values["action"].as<std::string>();
  const std::string root = storage_root_of(values);
  const auto& users = values["users"].as<std::vector<std::string>>();

  if (action == "check") {
    if (!users.empty()) throw UsageError("dlx storage check takes no user names");
    const auto problems = store::check_user_directories(root);
    for (const auto& p : problems) {
      fmt::print("{}  not {}'s own directory: {}\n", p.path.string(), p.user, p.problem);
    }
    fmt::print("# {}: {} user director{} with a problem{}\n", root, problems.size(),
               problems.size() == 1 ? "y" : "ies",
               problems.empty() ? "" : " (dlx refuses to submit into them: look inside, remove, then "
                                       "dlx storage add-user USER)");
    return problems.empty() ? 0 : 1;
  }
  if (action != "add-user") throw UsageError(fmt::format("unknown dlx storage action '{}' (add-user, check)", action));
  if (users.empty()) throw UsageError("dlx storage add-user needs at least one user name");
  if (::geteuid() != 0) throw UsageError("dlx storage add-user must run as root (it hands directories to users)");
  int failures = 0;
  for (const auto& user : users) {
    try {
      const bool made = store::add_user_directory(root, user);
      fmt::print("{}/{}: {}\n", root, user, made ? "created (0750)" : "already the user's own");
    } catch (const Error& e) {
      fmt::print(stderr, "dlx storage: {}\n", e.what());
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace dlx::cli
