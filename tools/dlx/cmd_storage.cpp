// SPDX-License-Identifier: Apache-2.0
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
#include "dlx/config/display_text.hpp"
#include "dlx/store/user_directories.hpp"
#include "experiment_locator.hpp"
#include "options.hpp"

namespace dlx::cli {

namespace {

std::string storage_root_of(const boost::program_options::variables_map& values, const CommandLine& command) {
  if (values.count("storage-root")) return values["storage-root"].as<std::string>();
  if (const char* from_environment = std::getenv("DLX_STORAGE_ROOT"); from_environment && *from_environment) {
    return from_environment;
  }
  if (auto root = plugstack_argument("storage_root"); !root.empty()) return root;
  throw UsageError("cannot find the storage root: give --storage-root DIR, set DLX_STORAGE_ROOT, or run this "
                   "where `scontrol show config` names the plugstack.conf with dlx's line",
                   usage_text(command));
}

void add_storage_root_option(CommandLine& command) {
  command.options.add_options()(
      "storage-root", boost::program_options::value<std::string>()->value_name("DIR"),
      "the plugin's storage_root (default: $DLX_STORAGE_ROOT, else plugstack.conf)");
}

CommandLine storage_add_user_command_line() {
  CommandLine command("storage add-user", "USER... [--storage-root DIR]",
                      "Makes <storage_root>/USER for each user, owned by the user and their group,\n"
                      "mode 0750, or says it already is the user's own: with a storage root of mode\n"
                      "0755 no user needs to create anything in it, and nobody can create a directory\n"
                      "in another's name (docs/security.md). Runs as root.",
                      "sudo dlx storage add-user alice bob");
  add_storage_root_option(command);
  return command;
}

CommandLine storage_check_command_line() {
  CommandLine command("storage check", "[--storage-root DIR]",
                      "Lists the entries of the storage root named after a user that are not that\n"
                      "user's own directory (made in their place by someone else, a link, or writable\n"
                      "by others), which dlx refuses to submit into. Exit status 1 when there are any.",
                      "dlx storage check --storage-root /shared/dlx");
  add_storage_root_option(command);
  return command;
}

CommandLine storage_command_line() {
  namespace po = boost::program_options;
  CommandLine command("storage", "add-user USER... | check [--storage-root DIR]",
                      "The administrator's side of the plugin's storage root (docs/security.md), where\n"
                      "each user's experiments live in <storage_root>/<user>: make users' directories,\n"
                      "and check that every directory named after a user is that user's own. The\n"
                      "storage root is --storage-root, else $DLX_STORAGE_ROOT, else the storage_root of\n"
                      "dlx's line in the plugstack.conf that `scontrol show config` names.",
                      "sudo dlx storage add-user alice bob\n"
                      "dlx storage check");
  add_storage_root_option(command);
  command.operands.add_options()("action", po::value<std::string>()->required(), "add-user or check")(
      "users", po::value<std::vector<std::string>>()->default_value({}, ""), "users");
  command.positional.add("action", 1).add("users", -1);
  command.subcommands = {
      {"add-user", "make <storage_root>/USER, the user's own, mode 0750 (as root)", storage_add_user_command_line},
      {"check", "list entries named after a user that are not the user's own", storage_check_command_line}};
  return command;
}

}  // namespace

int run_storage(const Arguments& arguments) {
  const auto command = storage_command_line();
  answer_help(arguments, command);
  const auto values = parse_options(arguments, command);
  const std::string action = values["action"].as<std::string>();
  const std::string root = storage_root_of(values, command);
  const auto& users = values["users"].as<std::vector<std::string>>();

  if (action == "check") {
    if (!users.empty()) {
      throw UsageError("dlx storage check takes no user names", usage_text(storage_check_command_line()));
    }
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
  if (action != "add-user") {
    throw UsageError(fmt::format("unknown dlx storage action '{}' (add-user, check)", config::abbreviated(action)),
                     usage_text(command));
  }
  if (users.empty()) {
    throw UsageError("dlx storage add-user needs at least one user name", usage_text(storage_add_user_command_line()));
  }
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
