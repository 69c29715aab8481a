// SPDX-License-Identifier: Apache-2.0
#pragma once
// Trials whose array task ended without a word, found by the tickets that wait for them.
//
// A trial the journal says is running is lost when the array task that had it is no longer
// running or pending in Slurm: the user cancelled that task (`scancel 12_3`), it failed without a
// requeue (its node lost, slurmstepd killed, a PreemptMode of CANCEL), or its trainer exited 0
// without finishing the trial. Nothing reports for it again, so a ticket that waits on it (an ASHA
// ticket for running trials to reach a rung, a PBT round for every member of the last one) would
// wait DLX_WORK_WAIT_S (a day) holding its nodes, and the search would never end. The same holds
// for a paused trial whose task ended before it settled the pause: no ticket may promote it.
//
// There is no daemon, so the waiting tickets look (searcher_work.cpp):
//   1. A ticket told to wait (its rank 0) lists its array's tasks (slot_yield.hpp's
//      array_tasks_now: squeue -t all) at its first wait and then every DLX_LOST_TRIAL_CHECK_S
//      seconds (default kLostTrialCheckPeriod, 30; 0: never).
//   2. A trial is suspect when the journal has it running (or paused, unsettled) and its array
//      task is listed in an ended state (slurm::task_has_ended) or not listed at all (ended and
//      forgotten after MinJobAge), in a listing that shows the asking ticket's own task as not
//      ended (so squeue answered about this job, and the job is not gone).
//   3. It is lost when it is still suspect, as the journal had it (status, ticket, last length),
//      at a check two periods or more after the first: a requeue passes through
//      states that have ended for a second or two (NODE_FAIL, PREEMPTED, then PENDING), and a
//      listing taken in between is not enough.
//   4. The ticket reports it under the journal lock (Coordinator::report_lost), only if the
//      journal still has it as seen: a running trial exits failed ("lost: ..."), an unsettled
//      pause is settled. Several tickets may find the same trial; the journal keeps one event.
// trial.h5 is left alone (one writer per file, and its writer is gone): `dlx status` shows the
// trial lost from what Slurm says. Only tasks are seen: a task running several tickets in turn
// whose earlier trial was lost while a later ticket runs is not found (it is never a false
// positive either).
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dlx/config/experiment.hpp"
#include "dlx/env/environment.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/searcher/search_state.hpp"
#include "dlx/slurm/array_tasks.hpp"

namespace dlx::launch {

inline constexpr std::chrono::seconds kLostTrialCheckPeriod{30};

struct LostTrial {
  searcher::TrialState seen;  // as the journal had it when it was found suspect
  int task = 0;               // its array task
  std::string task_state;     // squeue's state of that task, "" when squeue no longer lists it
};

// Step 2, pure: the suspects in `state` given the array's tasks (`tasks`: array task id -> task)
// and the asking ticket's own task; none when `tasks` does not show `own_task` as not ended.
std::vector<LostTrial> suspect_lost_trials(const searcher::SearchState& state, const config::Experiment& experiment,
                                           const std::map<int, slurm::ArrayTask>& tasks, int own_task);

// Step 3: the suspects of successive checks, confirmed once suspect for long enough.
class LostTrialWatch {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LostTrialWatch(Clock::duration confirm_after) : confirm_after_(confirm_after) {}

  // This check's suspects (taken at `now`) in; out, those suspect, unchanged, since
  // confirm_after or longer. A trial not suspect in this check starts again from nothing.
  std::vector<LostTrial> confirm(const std::vector<LostTrial>& suspects, Clock::time_point now);

 private:
  Clock::duration confirm_after_;
  std::map<int, std::pair<LostTrial, Clock::time_point>> first_seen_;  // by trial id
};

// The line the journal and the ticket's log keep: "lost: its array task 12_3 ended (CANCELLED)
// without reporting to the searcher; no run will continue it (found by ticket 7)".
std::string lost_trial_detail(const LostTrial& lost, const std::string& array_job_id, int reporting_ticket);

// Steps 1 to 4 for one waiting ticket (searcher_work.cpp calls it after each answer of wait).
class LostTrialLookout {
 public:
  // From `env`: SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID and DLX_LOST_TRIAL_CHECK_S. Off outside a
  // job array, for a period of 0 or less, and where `enabled` is false (ranks other than 0).
  LostTrialLookout(const env::EnvMap& env, bool enabled);

  // When a check is due: the array's tasks listed, the trials found lost reported (and said on
  // `log` when it is not null). True when it reported one: the searcher may have work now.
  bool report_if_due(searcher::Coordinator& coordinator, const config::Experiment& experiment, int ticket,
                     std::FILE* log);

 private:
  std::string array_job_;
  int own_task_ = -1;
  std::chrono::seconds period_{0};
  LostTrialWatch watch_;
  LostTrialWatch::Clock::time_point next_check_{};
};

}  // namespace dlx::launch
