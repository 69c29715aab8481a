// SPDX-License-Identifier: Apache-2.0
#pragma once
// How an array task learns what to do: before the trainer starts, every rank's dlx-launch asks the
// searcher for the work of its ticket (the array task id) through the experiment journal
// (searcher/coordinator.hpp). The first rank to ask records the answer; the others, and the same
// ticket after a requeue, read it back, so every rank runs the same trial without talking to the
// others. The answer then rewrites the trial contract for the trainer:
//   DLX_TRIAL_ID, DLX_HPARAMS, DLX_HP_*, DLX_CHECKPOINT_DIR    the trial the searcher chose
//   DLX_TICKET, DLX_START_LENGTH, DLX_TARGET_LENGTH             where it starts and when to report
//   DLX_LENGTH_UNIT, DLX_SEARCHER_METRIC   those lengths' unit (batches, records, epochs; empty
//       without a searcher length) and the metric the searcher optimises
//   DLX_LATEST_CHECKPOINT                                       the trial's own latest valid
//       checkpoint when it has one (a requeue), else the checkpoint the searcher named (an ASHA
//       promotion resumes its own rung checkpoint; a PBT exploit starts from its parent's)
// A "wait" answer (ASHA has nothing promotable yet, a PBT round is not complete) is polled with
// backoff up to DLX_WORK_WAIT_S seconds (default 86400; in a throttled array every 2 s at most);
// "none" means the ticket has no work: the array task ends successfully without starting the
// trainer, unless its trial ended in this very run (another rank refused it, or crashed for good,
// and rank 0 told the searcher before this rank asked): then this rank exits as the others do
// (launch_phases.cpp, exit_if_this_run_failed; peer_crash.hpp). Inside a job array a waiting ticket gives its slot back (exit 85: Slurm requeues it, it
// asks again later) at a notice. Under the array's throttle (`%N`) a requeued trial goes first
// (slot_yield.hpp): a ticket with no work recorded yet yields before it asks the searcher, and a
// waiting ticket at once (after DLX_WORK_HOLD_S seconds, default 0), whenever squeue shows the
// array task of a trial the journal says is running as pending for its turn. A waiting ticket
// also reports the trials whose array task ended without a word (lost_trials.hpp), which it
// would otherwise wait for until DLX_WORK_WAIT_S.
#include <cstdio>
#include <optional>
#include <string>

#include "dlx/config/experiment.hpp"
#include "dlx/env/trial_environment.hpp"
#include "dlx/launch/launch_env.hpp"
#include "dlx/searcher/method.hpp"

namespace dlx::launch {

// The work of this task's ticket, waiting while the searcher says wait. Of kind `none`: no work
// (the reason is printed on `log` when it is not null; Work::trial names the ticket's trial when
// that has ended). Of kind `wait`: give the slot back, exit 85 (see above). `look_for_lost`: while
// it waits, this process looks for trials whose array task ended without a word and reports them
// (lost_trials.hpp; rank 0 of the ticket).
searcher::Work take_searcher_work(const config::Experiment& experiment, const env::TrialEnvironment& trial,
                                  const env::EnvMap& env, std::FILE* log, bool look_for_lost);

// Rewrites `trial` for `work` (creating the trial's checkpoint directory) and appends the
// variables above to `vars`.
void apply_searcher_work(const searcher::Work& work, const config::Experiment& experiment,
                         env::TrialEnvironment& trial, EnvVars& vars, std::FILE* log);

// Best effort: tells the searcher that the trial failed for good (its checkpoints and results
// are then never promoted or exploited). A failure to tell it is printed, not thrown.
void tell_searcher_failed(const config::Experiment& experiment, const env::TrialEnvironment& trial,
                          const std::string& why);

}  // namespace dlx::launch
