// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/resume_checkpoint.hpp"

#include <fmt/format.h>

#include "dlx/checkpoint/discovery.hpp"

namespace dlx::launch {

std::optional<std::filesystem::path> latest_valid_checkpoint(
    const std::filesystem::path& checkpoint_dir, const checkpoint::Expectation& expect,
    std::FILE* log) {
  auto found = checkpoint::find_latest_valid(checkpoint_dir, expect, checkpoint::Verification::full);
  if (log != nullptr) {
    for (const auto& skipped : found.skipped) {
      fmt::print(log, "dlx-launch: skipping checkpoint {}: {}\n", skipped.path.string(),
                 skipped.reason);
    }
  }
  return found.path;
}

std::string resume_checkpoint_value(const env::TrialEnvironment& trial,
                                    const std::string& experiment_name, std::FILE* log) {
  if (trial.latest_checkpoint) return trial.latest_checkpoint->string();
  if (!trial.in_trial() || !trial.checkpoint_dir) return "";
  const checkpoint::Expectation expect{.experiment = experiment_name, .trial_id = trial.trial_id};
  auto latest = latest_valid_checkpoint(*trial.checkpoint_dir, expect, log);
  return latest ? latest->string() : "";
}

}  // namespace dlx::launch
