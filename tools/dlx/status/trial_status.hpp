// SPDX-License-Identifier: Apache-2.0
#pragma once
// What `dlx status` says a trial is doing now, from its trial.h5 and, when Slurm was asked, from
// the array task that runs it. A record alone cannot tell a trial waiting to be requeued from one
// whose job was killed, nor a launch that Slurm refused from one still queued; Slurm alone does
// not know why a task ended. Together (pure logic, table-driven tests):
//   no record   task pending                      pending
//               task pending, launch failed       launch failed (JobLaunchFailure, or held after
//                                                 one: launch_failed_requeued_held)
//               task running                      starting (the trainer has not written one yet)
//               task ended, or the job gone       not started (a task that ran and ended
//                                                 COMPLETED or FAILED: whether dlx-launch took
//                                                 the trial on, and where to look)
//   running     stop_reason "crash: ..."          restarting (n of max_restarts), or crash-looping
//                                                 when the last crashes looked the same
//               stop_reason "requeue: ..."        requeued (checkpointed on a notice)
//               task pending, no such reason      requeued (ended without recording why: killed,
//                                                 its node lost)
//               task ended, or the job gone       lost (no run will continue it)
//               otherwise                         running (after a crash restart: "restart n of m")
//   any other   completed, failed, stopped, paused, as trial.h5 says
// A pending task adds Slurm's reason to the detail line ("requeued: Slurm: pending (BeginTime)").
#include <map>
#include <optional>
#include <string>

#include "dlx/slurm/array_tasks.hpp"

namespace dlx::cli {

using SlurmTask = slurm::ArrayTask;  // state, reason, restarts (dlx/slurm/array_tasks.hpp)

struct SlurmView {
  std::string job_id;                 // the array job
  bool gone = false;                  // Slurm no longer knows it (ended more than MinJobAge ago)
  std::map<int, SlurmTask> tasks;     // by array task id
  std::string output;                 // the job's output file (StdOut), "" when not known
  std::string why_unknown;            // set when Slurm could not be asked (nothing above is known)

  const SlurmTask* task(std::optional<int> id) const {
    if (!id) return nullptr;
    const auto found = tasks.find(*id);
    return found == tasks.end() ? nullptr : &found->second;
  }
};

// Whether a task's state and reason say its batch script could not be started.
bool launch_failed(const SlurmTask& task);

// The record's side of a trial, as status_report reads it.
struct RecordFacts {
  std::string state;        // trial.h5's; "" without a record
  std::string stop_reason;
  int failures = 0;
  int same_failures = 0;
};


struct ShownState {
  std::string state;
  std::string note;    // "1 of 5"
  std::string detail;  // for the line under the table; "" when the state says it all
};

// `task`: the trial's array task as Slurm lists it (nullptr: not listed, or not known which);
// `slurm`: nullptr when Slurm was not asked (the record alone decides); `launched`, for the words
// of "not started": whether dlx-launch took the trial on (it made trials/<id>/logs/ as it did),
// nullopt when that says nothing (an array task that runs several tickets may have stopped before
// this one's turn).
ShownState trial_status(const RecordFacts& record, const SlurmTask* task, const SlurmView* slurm, int max_restarts,
                        std::optional<bool> launched = std::nullopt);

}  // namespace dlx::cli
