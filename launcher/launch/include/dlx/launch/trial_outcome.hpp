#pragma once
// After the trainer exited, rank 0's dlx-launch makes trials/<id>/trial.h5 tell the truth: a
// trainer that crashed (or was killed) cannot mark itself failed. The trainer has exited, so
// dlx-launch is the file's only writer (load, modify, save).
//   exit 0                 nothing to do (the trainer's finish() wrote "completed")
//   exit 85 (requeue)      nothing: the record stays "running", the requeued run resumes it
//   any other exit         state "failed" + exit_code, when the record is "running" or missing
#include <optional>

#include "dlx/checkpoint/trial_record.hpp"
#include "dlx/env/trial_environment.hpp"
#include "dlx/slurm/task_placement.hpp"

namespace dlx::launch {

// Pure decision: should a record in this state (nullopt: no file) be marked failed?
bool should_mark_failed(int exit_status, const std::optional<checkpoint::TrialRecord>& record);

// Applies the rule above to the trial's record. Returns true when it wrote the file.
// Throws CheckpointError (or ConfigError for a broken snapshot) on failure.
bool record_trainer_exit(const env::TrialEnvironment& trial,
                         const slurm::TaskPlacement& placement, int exit_status);

}  // namespace dlx::launch
