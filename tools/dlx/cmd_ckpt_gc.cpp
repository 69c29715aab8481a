// dlx ckpt gc EXPERIMENT [--dry-run] [--remove-invalid] [--tmp-age-minutes N]: apply the
// experiment's retention policy to every trial (keeping what the searcher's journal still
// references), and remove temporary files of saves that died.
#include <chrono>

#include <fmt/format.h>

#include "cmd_ckpt.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/store/experiment_layout.hpp"
#include "options.hpp"

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
      auto modified = fs::last_write_time(entry.path(), error);
      if (!error && now - modified > age) out.push_back(entry.path());
    }
  }
  return out;
}

}  // namespace

int run_gc(const Arguments& arguments) {
  namespace po = boost::program_options;
  po::options_description options("dlx ckpt gc EXPERIMENT_DIR|JOBID [options]");
  options.add_options()("dry-run", "print what would be deleted, delete nothing")(
      "remove-invalid", "also delete checkpoints that fail verification")(
      "tmp-age-minutes", po::value<int>()->default_value(60),
      "delete temporary files of unfinished saves older than this")(
      "experiment", po::value<std::string>()->required(), "experiment");
  po::positional_options_description positional;
  positional.add("experiment", 1);
  auto values = parse_options(arguments, options, positional);
  bool dry_run = values.count("dry-run") > 0;

  auto target = locate_target(values["experiment"].as<std::string>());
  auto plan = retention_plan(target);
  std::vector<fs::path> doomed;
  std::uint64_t freed = 0;
  for (auto& [trial, files] : plan) {
    if (target.trial_id && trial != *target.trial_id) continue;
    for (auto& f : files) {
      bool remove = f.valid ? f.kept_by.empty() : values.count("remove-invalid") > 0;
      if (!remove) {
        // A dry run says why each kept file stays (the searcher's reason included).
        if (dry_run && f.valid) fmt::print("would keep {}  (kept by {})\n", f.path.string(), kept_by_text(f));
        continue;
      }
      doomed.push_back(f.path);
      freed += f.file_bytes;
      fmt::print("{} {}{}\n", dry_run ? "would delete" : "delete", f.path.string(),
                 f.valid ? "" : "  (invalid: " + f.problem + ")");
    }
  }
  for (const auto& t : stale_temporaries(target.experiment_dir,
                                         std::chrono::minutes(values["tmp-age-minutes"].as<int>()))) {
    doomed.push_back(t);
    fmt::print("{} {}  (temporary file of a save that did not finish)\n",
               dry_run ? "would delete" : "delete", t.string());
  }
  if (!dry_run) {
    for (const auto& path : doomed) fs::remove(path);
    std::set<fs::path> directories;
    for (const auto& path : doomed) directories.insert(path.parent_path());
    for (const auto& directory : directories) fsync_directory(directory);
  }
  fmt::print("# {} {} files, {} of checkpoints\n", dry_run ? "would delete" : "deleted",
             doomed.size(), human_bytes(freed));
  return 0;
}

}  // namespace dlx::cli::ckpt
