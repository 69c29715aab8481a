// SPDX-License-Identifier: Apache-2.0
// dlx ckpt gc EXPERIMENT [--dry-run] [--remove-invalid] [--tmp-age-minutes N]: apply the
// experiment's retention policy to every trial (keeping what the searcher's journal still
// references), and remove temporary files of saves that died.
//
// It deletes, so it acts with the experiment owner's rights only (owner_rights.hpp: as root it
// becomes the owner first), never through a symbolic link (a trials/<id> that is a link is not a
// trial; every deletion opens the directories below the experiment with O_NOFOLLOW), and only
// on regular files.
#include <unistd.h>

#include <chrono>

#include <fmt/format.h>

#include "cmd_ckpt.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/store/experiment_layout.hpp"
#include "options.hpp"
#include "owner_rights.hpp"

namespace dlx::cli::ckpt {
namespace {

namespace fs = std::filesystem;

// Temporary files older than `age`: a live save finishes long before.
std::vector<fs::path> stale_temporaries(const fs::path& experiment, std::chrono::minutes age) {
  std::vector<fs::path> out;
  auto now = fs::file_time_type::clock::now();
  for (int id : store::trial_ids_on_disk(experiment)) {
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(store::checkpoint_dir(experiment, id), error)) {
      if (!is_temporary_name(entry.path().filename().string())) continue;
      std::error_code type_error;
      if (entry.symlink_status(type_error).type() != fs::file_type::regular) continue;
      auto modified = fs::last_write_time(entry.path(), error);
      if (!error && now - modified > age) out.push_back(entry.path());
    }
  }
  return out;
}

}  // namespace

CommandLine gc_command_line() {
  namespace po = boost::program_options;
  CommandLine command("ckpt gc", "EXPERIMENT_DIR|JOBID [--dry-run] [--remove-invalid] [--tmp-age-minutes N]",
                      "Applies the experiment's retention policy to every trial, keeping what the\n"
                      "searcher's journal still references, and deletes the temporary files of saves\n"
                      "that died. It acts with the experiment owner's rights only (as root it becomes\n"
                      "the owner first), never through a symbolic link, and only on regular files.",
                      "dlx ckpt gc 42 --dry-run\n"
                      "dlx ckpt gc 42");
  command.options.add_options()("dry-run", "print what would be deleted, delete nothing")(
      "remove-invalid", "also delete checkpoints that fail verification")(
      "tmp-age-minutes", po::value<int>()->default_value(60)->value_name("N"),
      "delete temporary files of unfinished saves older than this");
  command.operands.add_options()("experiment", po::value<std::string>()->required(), "experiment");
  command.positional.add("experiment", 1);
  return command;
}

int run_gc(const Arguments& arguments) {
  auto values = parse_options(arguments, gc_command_line());
  bool dry_run = values.count("dry-run") > 0;

  auto target = locate_target(values["experiment"].as<std::string>());
  const bool root = ::geteuid() == 0;
  const auto acting_as = act_as_experiment_owner(target.experiment_dir);
  if (root && ::geteuid() != 0) {
    fmt::print("# running as {}, the owner of {}, not as root\n", acting_as, target.experiment_dir.string());
  }
  auto plan = retention_plan(target);
  std::vector<std::pair<fs::path, std::uint64_t>> doomed;  // path, bytes
  for (auto& [trial, files] : plan) {
    if (target.trial_id && trial != *target.trial_id) continue;
    for (auto& f : files) {
      bool remove = f.valid ? f.kept_by.empty() : values.count("remove-invalid") > 0;
      if (!remove) {
        // A dry run says why each kept file stays (the searcher's reason included).
        if (dry_run && f.valid) fmt::print("would keep {}  (kept by {})\n", f.path.string(), kept_by_text(f));
        continue;
      }
      doomed.emplace_back(f.path, f.file_bytes);
      fmt::print("{} {}{}\n", dry_run ? "would delete" : "delete", f.path.string(),
                 f.valid ? "" : "  (invalid: " + f.problem + ")");
    }
  }
  for (const auto& t : stale_temporaries(target.experiment_dir,
                                         std::chrono::minutes(values["tmp-age-minutes"].as<int>()))) {
    doomed.emplace_back(t, 0);
    fmt::print("{} {}  (temporary file of a save that did not finish)\n",
               dry_run ? "would delete" : "delete", t.string());
  }
  std::size_t deleted = 0, refused = 0;
  std::uint64_t freed = 0;
  for (const auto& [path, bytes] : doomed) {
    if (!dry_run) {
      try {
        store::remove_file_below(target.experiment_dir, path);
      } catch (const Error& e) {  // e.g. a checkpoints/ that is a link out of the experiment
        fmt::print(stderr, "dlx ckpt gc: not deleted: {}\n", e.what());
        ++refused;
        continue;
      }
    }
    ++deleted;
    freed += bytes;
  }
  fmt::print("# {} {} files, {} of checkpoints\n", dry_run ? "would delete" : "deleted", deleted,
             human_bytes(freed));
  return refused == 0 ? 0 : 1;
}

}  // namespace dlx::cli::ckpt
