// SPDX-License-Identifier: Apache-2.0
#pragma once
// DLX_LATEST_CHECKPOINT for the trainer: dlx-launch runs as the user, so it (not the SPANK plugin,
// which runs as root) looks into the trial's checkpoint directory. The checkpoint is the newest
// step-<N>.h5 that verifies fully (checkpoint/discovery.hpp); newer files that do not are skipped
// and reported. Empty on a fresh start, as the trial contract says. A value already set (by a
// searcher decision that names the checkpoint to start from) is left alone.
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/env/trial_environment.hpp"

namespace dlx::launch {

// The latest valid checkpoint in `checkpoint_dir` (nullopt: none, or no such directory). Skipped
// files are reported on `log` ("dlx-launch: skipping checkpoint PATH: REASON") when it is not null.
std::optional<std::filesystem::path> latest_valid_checkpoint(
    const std::filesystem::path& checkpoint_dir, const checkpoint::Expectation& expect,
    std::FILE* log);

// The value dlx-launch gives DLX_LATEST_CHECKPOINT: the one in `trial` when set, else discovery in
// its checkpoint directory, else "" (also outside a trial or without DLX_CHECKPOINT_DIR).
std::string resume_checkpoint_value(const env::TrialEnvironment& trial,
                                    const std::string& experiment_name, std::FILE* log);

}  // namespace dlx::launch
