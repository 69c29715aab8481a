// SPDX-License-Identifier: Apache-2.0
#pragma once
// An array job's tasks as squeue lists them, one per line with -r: what dlx-launch asks before it
// yields its slot (launch/slot_yield.hpp) or judges a trial lost (launch/lost_trials.hpp), and
// what `dlx status` shows of each trial's task.
#include <chrono>
#include <map>
#include <string>
#include <string_view>

namespace dlx::slurm {

struct ArrayTask {
  std::string state;   // squeue's: PENDING, RUNNING, COMPLETING, COMPLETED, FAILED, CANCELLED...
  std::string reason;  // squeue's: None, BeginTime, JobArrayTaskLimit, launch_failed_requeued_held...
  int restarts = 0;    // RestartCnt
};

// Whether a task has ended for good: a state of Slurm's that no task leaves by itself (COMPLETED,
// CANCELLED, FAILED, TIMEOUT, NODE_FAIL, PREEMPTED, OUT_OF_MEMORY, BOOT_FAIL, DEADLINE, REVOKED,
// LAUNCH_FAILED). Any other state, known or not, still runs or may run again (PENDING, REQUEUED,
// RUNNING, COMPLETING, SUSPENDED, a hold...): a task is never taken for ended by a state this list
// does not name. A requeue passes from an ended state to PENDING within a second or two.
bool task_has_ended(const ArrayTask& task);

// What squeue answered for an array job's tasks.
struct ArrayTaskListing {
  std::map<int, ArrayTask> tasks;
  bool forgotten = false;   // squeue: "Invalid job id" (slurmctld forgets a job MinJobAge after it ended)
  std::string why_unknown;  // squeue did not answer ("squeue failed (exit 1)", no squeue, the time
                            // limit, not a job id); "" when it did
};

// `squeue -h -r -t STATES -j ARRAY_JOB_ID -O ArrayTaskID,State,Reason,RestartCnt` (STATES: "all",
// "PENDING", ...), bounded by `timeout` and 64 MiB of output.
ArrayTaskListing ask_array_tasks(const std::string& array_job_id, std::string_view states,
                                 std::chrono::milliseconds timeout);

// `squeue -h -r -O ArrayTaskID,State,Reason,RestartCnt` lines (with_state), or the same without
// State (then every task's state is `state_of_all`, the state squeue was asked for with -t): array
// task id -> task. Lines that do not parse (a job that is not an array: "N/A") are skipped.
std::map<int, ArrayTask> parse_array_tasks(std::string_view squeue_output, bool with_state,
                                           std::string_view state_of_all = "");

}  // namespace dlx::slurm
