// SPDX-License-Identifier: Apache-2.0
#pragma once
// After the trainer exited, rank 0's dlx-launch makes trials/<id>/trial.h5 tell the truth: a
// trainer that crashed (or was killed) cannot record that itself. The trainer has exited, so
// dlx-launch is the file's only writer (load, modify, save).
//   exit 0                 nothing to do (the trainer's finish() wrote "completed")
//   exit 85 (requeue)      nothing: the record stays "running", the requeued run resumes it
//   any other exit         a crash, when the record is "running" or missing: `failures` + 1,
//                          stop_reason "crash: ...". While failures <= the experiment's
//                          max_restarts the record stays "running" and every rank's dlx-launch
//                          exits 85, so Slurm requeues the trial (RequeueExit=85) and it resumes
//                          from its latest checkpoint; past it, state "failed" with the last
//                          error, and the trainer's status is passed through.
// Every rank decides alike: each reads the failure count when it starts (before rank 0 can have
// changed it), and max_restarts from the same frozen snapshot. Preemptions, time limits and
// `scontrol requeue` end with exit 85 (or a signal after the trainer checkpointed) and never count.
#include <optional>
#include <string>
#include <string_view>

#include "dlx/env/trial_context.hpp"
#include "dlx/record/trial_record.hpp"

namespace dlx::launch {

// Pure decision: should a record in this state (nullopt: no file) count this exit as a crash?
bool should_mark_failed(int exit_status, const std::optional<record::TrialRecord>& record);

struct ExitDecision {
  int status = 0;        // dlx-launch's own exit status
  bool crash = false;    // counted against max_restarts
  bool requeue = false;  // a crash with restarts left: exit 85 so that Slurm requeues the trial
};

// Pure. `record_at_start`: the record when dlx-launch started; `max_restarts`: nullopt when
// crashes are not restarted (not a Slurm job, or no frozen snapshot).
ExitDecision decide_exit(int exit_status, const std::optional<record::TrialRecord>& record_at_start,
                         std::optional<int> max_restarts);

// "exit 3", "killed by SIGKILL (exit 137)".
std::string describe_exit(int exit_status);

// Applies `decision` to the trial's record (rank 0). `what`: the error for stop_reason
// (describe_exit(exit_status), or the crash of another rank that ended this one: peer_crash.hpp).
// Returns true when it wrote the file. Throws CheckpointError (or ConfigError for a broken
// snapshot) on failure.
bool record_trainer_exit(env::TrialContext& context, int exit_status, std::string_view what,
                         const ExitDecision& decision, std::optional<int> max_restarts);

}  // namespace dlx::launch
