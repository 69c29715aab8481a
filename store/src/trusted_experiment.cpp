// SPDX-License-Identifier: Apache-2.0
#include "dlx/store/trusted_experiment.hpp"

#include <string>

#include "dlx/common/trusted_path.hpp"
#include "dlx/store/experiment_layout.hpp"

namespace dlx::store {

std::string read_trusted_experiment_file(const fs::path& experiment_dir, const std::string& name, uid_t owner,
                                         std::size_t max_bytes) {
  const UniqueFd directory = open_trusted_directory(experiment_dir, owner);
  const fs::path shown = experiment_dir / name;
  const UniqueFd file = open_owned_file_at(directory.get(), name, owner, shown);
  return read_open_file(file.get(), max_bytes, shown);
}

fs::path make_checkpoint_dir(const fs::path& experiment_dir, int trial_id, uid_t owner) {
  constexpr mode_t kMode = 0750;
  const UniqueFd experiment = open_trusted_directory(experiment_dir, owner);
  const UniqueFd trials =
      open_owned_directory_at(experiment.get(), "trials", owner, /*create=*/true, kMode, experiment_dir / "trials");
  const std::string id = std::to_string(trial_id);
  const UniqueFd trial =
      open_owned_directory_at(trials.get(), id, owner, /*create=*/true, kMode, trial_dir(experiment_dir, trial_id));
  const fs::path checkpoints = checkpoint_dir(experiment_dir, trial_id);
  open_owned_directory_at(trial.get(), checkpoints.filename().string(), owner, /*create=*/true, kMode, checkpoints);
  return checkpoints;
}

}  // namespace dlx::store
