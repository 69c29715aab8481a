// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which file this rank's output is copied into, and starting the copy (output_tee.hpp). The file
// is trials/<id>/logs/attempt-<N>.rank-<R>.log (store/trial_logs.hpp: names and how the ranks of
// a run agree on N). Kept only inside a trial, when stdout is not a terminal (an interactive
// `srun --pty` keeps its terminal) and DLX_LOG_MAX_MB is not 0. Anything that stops the copy
// (a directory that cannot be made, a file that is not the user's) is a warning: the trial runs,
// its output still goes to Slurm's files.
#include <memory>
#include <string>

#include "dlx/env/environment.hpp"
#include "dlx/env/trial_environment.hpp"
#include "dlx/launch/output_tee.hpp"
#include "dlx/slurm/task_placement.hpp"

namespace dlx::launch {

// The cap of each log in MiB from DLX_LOG_MAX_MB (default 64; 0: no copy). Throws env::EnvError.
std::uint64_t log_max_bytes(const env::EnvMap& env);

// The run key: <job>.<SLURM_RESTART_COUNT or 0>.<SLURM_STEP_ID or "batch"> (<job>: "<array job>_<task>"
// for an array task, else SLURM_JOB_ID), the same on
// every rank of a step; outside Slurm the PMIx namespace (mpirun) or "pid-<pid>".
std::string run_key(const env::TrialEnvironment& trial, const env::EnvMap& env);

// Redirects this process's stdout and stderr through the tee into the rank's log; nullptr when
// no log is kept (above), after a warning on stderr when one should have been.
std::unique_ptr<StdioThroughTee> start_trial_log(const env::TrialEnvironment& trial,
                                                 const env::TaskPlacement& placement,
                                                 const env::EnvMap& env);

}  // namespace dlx::launch
