// SPDX-License-Identifier: Apache-2.0
#pragma once
// When an array task gives its slot back to a requeued trial (searcher_work.hpp). Under the
// array's throttle (`%N`, max_concurrent_trials) a requeued trial's task waits in Slurm's queue
// behind every task that never ran: Slurm orders equal priorities by submission time, and a
// requeue resets the task's to the moment of the requeue. So a slot it frees goes to the next new
// ticket, which would start a new trial (or wait for the searcher) while the trial that was
// running waits for a slot. Instead, a ticket that is not running a trial yields: when Slurm
// shows the array task of a trial the journal says is running as pending, for a reason that
// passes by itself (BeginTime after the requeue, or NonZeroExitCode after a requeue by exit 85,
// the throttle, priority, resources; not a hold),
// the ticket exits 85 (RequeueExit: Slurm requeues it, and it asks again when it next starts).
// Each yielding ticket is requeued itself, so it waits cred_expire + 1 s before it can take a slot
// again, and the requeued trial's task comes first among them (it was requeued earliest).
#include <map>
#include <optional>
#include <string>

#include "dlx/searcher/search_state.hpp"
#include "dlx/slurm/array_tasks.hpp"

namespace dlx::launch {

// A pending task: its reason (BeginTime, JobArrayTaskLimit, Priority, JobHeldUser...) and
// RestartCnt (dlx/slurm/array_tasks.hpp parses squeue's lines).
using PendingTask = slurm::ArrayTask;

// The pending tasks of array job `array_job_id`, asked of squeue (bounded: 10 s); nullopt when
// squeue cannot say (not installed, slurmctld unreachable, an id that is not a number).
std::optional<std::map<int, PendingTask>> pending_array_tasks(const std::string& array_job_id);

// Every task of array job `array_job_id`, in any state squeue still knows (lost_trials.hpp), with
// the same bounds; nullopt as above.
std::optional<std::map<int, slurm::ArrayTask>> array_tasks_now(const std::string& array_job_id);

// Whether a pending task's reason passes by itself (a hold, a failed launch or a dependency that
// can never be met do not: yielding to such a task would only idle the slot).
bool waits_for_its_turn(const PendingTask& task);

struct TrialToResume {
  int trial = 0;
  int ticket = 0;
  std::string reason;  // Slurm's reason for its task
};

// The first trial the journal says is running whose array task (other than `own_ticket`'s) is
// pending and waits for its turn; nullopt when there is none. `array_tasks`: the array's task
// count when tasks run several tickets in turn (ticket k runs in task k % array_tasks:
// searcher/trial_plan.hpp), 0 for one task per ticket.
std::optional<TrialToResume> trial_to_resume(const searcher::SearchState& state, int own_ticket,
                                             const std::map<int, PendingTask>& pending, int array_tasks = 0);

}  // namespace dlx::launch
