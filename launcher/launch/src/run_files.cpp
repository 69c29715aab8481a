// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/run_files.hpp"

#include <fmt/format.h>

namespace dlx::launch {

std::optional<std::string> step_run_key(const env::TrialEnvironment& trial, const env::TaskPlacement& placement,
                                        const env::EnvMap& env) {
  if (placement.job_id.empty()) return std::nullopt;
  const auto step = env::lookup(env, "SLURM_STEP_ID");
  if (!step || step->empty()) return std::nullopt;
  return fmt::format("{}.{}.{}", placement.job_id, trial.restarts, *step);
}

void remove_other_runs(const std::filesystem::path& directory, std::string_view prefix,
                       const std::filesystem::path& keep) noexcept {
  try {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
      if (entry.path().filename().string().starts_with(prefix) && entry.path() != keep) {
        std::filesystem::remove_all(entry.path(), error);
      }
    }
  } catch (const std::exception&) {
    // An iterator that fails mid-way (an entry vanished, memory): the next start tries again.
  }
}

}  // namespace dlx::launch
