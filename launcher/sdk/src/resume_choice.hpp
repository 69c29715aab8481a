// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which checkpoint a trial resumes from (rank 0, in Trial::resume; docs/checkpoint-format.md):
// DLX_LATEST_CHECKPOINT when it is this trial's own file, or when it is another trial's file that
// the searcher named as this trial's start (PBT); otherwise the newest valid checkpoint in the
// trial's directory. Files skipped on the way are reported on stderr.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <utility>

#include "checkpointer.hpp"
#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/record/trial_record.hpp"
#include "dlx/env/trial_environment.hpp"

namespace dlx::detail {

struct Chosen {
  std::optional<checkpoint::Checkpoint> checkpoint;
  std::filesystem::path path;
  std::optional<record::StartCheckpoint> started_from;  // another trial's, named by the searcher
};

// The searcher's start checkpoint for this trial, as (trial, step); asked only for a file of
// another trial.
using StartLookup = std::function<std::optional<std::pair<std::int64_t, std::int64_t>>()>;

// Nothing found: an empty Chosen (a fresh start).
Chosen choose_checkpoint(const env::TrialEnvironment& environment,
                         const CheckpointSettings& settings, const StartLookup& start_of,
                         const checkpoint::Deferral& defer = {});

// What the other ranks require of the file rank 0 chose: this trial's when it lies in this
// trial's directory, else (the start checkpoint rank 0 has checked) only this experiment's.
checkpoint::Expectation expectation_for(const std::filesystem::path& path,
                                        const CheckpointSettings& settings);

}  // namespace dlx::detail
