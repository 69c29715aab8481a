#pragma once
// The experiment directory layout:
//   <storage_root>/<user>/<experiment>/        0750, owned by the user
//     experiment.yaml                          frozen snapshot
//     trials/<id>/trial.h5                     written by the trial's rank 0
//     trials/<id>/checkpoints/step-<N>.h5
//   <storage_root>/<user>/.jobs/<array job id> symlink to the experiment directory, made by the
//                                              plugin's remote context, so `dlx status JOBID` works
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace dlx::store {

namespace fs = std::filesystem;

fs::path trial_dir(const fs::path& experiment_dir, int trial_id);
fs::path trial_record_path(const fs::path& experiment_dir, int trial_id);
fs::path checkpoint_dir(const fs::path& experiment_dir, int trial_id);
fs::path job_link_path(const fs::path& user_root, const std::string& job_id);

// The checkpoint with the highest step in `checkpoint_dir` (step-<N>.h5), ignoring temporary
// files; nullopt when there is none or the directory does not exist.
std::optional<fs::path> latest_checkpoint(const fs::path& checkpoint_dir);

// Trial ids that have a directory under trials/, ascending.
std::vector<int> trial_ids_on_disk(const fs::path& experiment_dir);

}  // namespace dlx::store
