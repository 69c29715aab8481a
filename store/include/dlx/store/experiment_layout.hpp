// SPDX-License-Identifier: Apache-2.0
#pragma once
// The experiment directory layout:
//   <storage_root>/<user>/<experiment>/        0750, owned by the user
//     experiment.yaml                          frozen snapshot
//     trials/<id>/trial.h5                     written by the trial's rank 0
//     trials/<id>/checkpoints/step-<N>.h5
//   <storage_root>/<user>/.jobs/<array job id> symlink to the experiment directory, made by the
//                                              plugin's remote context, so `dlx status JOBID` works
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dlx::store {

namespace fs = std::filesystem;

fs::path trial_dir(const fs::path& experiment_dir, int trial_id);
fs::path trial_record_path(const fs::path& experiment_dir, int trial_id);
fs::path checkpoint_dir(const fs::path& experiment_dir, int trial_id);
fs::path job_link_path(const fs::path& user_root, const std::string& job_id);

struct CheckpointEntry {
  long long step = 0;
  fs::path path;
};

// The step-<N>.h5 entries of `checkpoint_dir`, ascending by step; temporary files (unfinished
// saves) and other names are not listed. Empty when the directory does not exist. An entry may
// be something other than a regular file (a FIFO, a link): the checkpoint reader refuses those
// with the reason (discovery and retention never follow a link), so they are listed here for it
// to judge and name.
std::vector<CheckpointEntry> list_checkpoints(const fs::path& checkpoint_dir);

// Accepts a checkpoint file (e.g. dlx::checkpoint::is_valid_checkpoint, which verifies it).
using CheckpointValidator = std::function<bool(const fs::path&)>;

// The checkpoint with the highest step that `valid` accepts (any, when `valid` is empty: a name
// scan that does not open the files); nullopt when there is none. The checkpoint library's
// find_latest_valid() also reports why each newer file was skipped.
std::optional<fs::path> latest_checkpoint(const fs::path& checkpoint_dir,
                                          const CheckpointValidator& valid = {});

// Trial ids that have a directory under trials/ (a real one: not a symbolic link), ascending.
std::vector<int> trial_ids_on_disk(const fs::path& experiment_dir);

// Deletes the file `path`, which lies below `experiment_dir`, without following a symbolic link
// on the way (every directory below the experiment directory is opened with O_NOFOLLOW), and
// fsyncs its directory. False when it was already gone; throws when the path leads out of the
// experiment or a directory on the way is a link.
bool remove_file_below(const fs::path& experiment_dir, const fs::path& path);

}  // namespace dlx::store
