// SPDX-License-Identifier: Apache-2.0
#pragma once
// Why a run stops on a checkpoint signal, as far as the run itself can tell honestly (recorded as
// trial.h5's stop_cause; the next run's restart event takes it as its cause). Slurm sends the same
// signals for different reasons (docs/fault-tolerance.md, "Verified on the local cluster"):
//   the plugin's --signal (USR2 by default) a lead time before the time limit, and at preemption
//   when slurm.conf has SlurmctldParameters=preempt_send_user_signal; SIGTERM at the time limit,
//   at `scontrol requeue` and `scancel`, and at preemption without that parameter.
// So the signal alone cannot tell them apart; the job's time left at the notice can:
//   time_limit   at most kTimeLimitWindow left (the lead is at most a minute or two, and Slurm's
//                limit check runs every 30 s, sending it up to a minute early)
//   preemption   more left, and a signal other than SIGTERM: only Slurm's --signal sends those
//                (or a user's `scancel --signal`, which this cannot tell from it)
//   requeue      more left, and SIGTERM: `scontrol requeue`, `scancel`, or a preemption without
//                preempt_send_user_signal (indistinguishable from inside the job)
//   notice       the time left is unknown (squeue missing or silent, at the notice and at the
//                trial's start): preemption, time limit or requeue
// A node failure or a job killed outright leave no record at all: the next run calls that restart
// "unknown"; a notice not acted on in time is classified from what dlx-launch kept of it
// (notice_marker.hpp); a crash is dlx-launch's "crash".
#include <chrono>
#include <string>

#include "dlx/slurm/job_time_left.hpp"

namespace dlx::detail {

inline constexpr std::chrono::seconds kTimeLimitWindow{180};

using slurm::TimeLeft;

// The job's time left and where it came from: at the notice itself, or (squeue silent then) as
// dlx-launch saw it when the trial started.
struct JobTimeLeft {
  TimeLeft left;
  bool as_of_start = false;
};

struct NoticeCause {
  std::string cause;   // time_limit, preemption, requeue, notice
  std::string detail;  // "SIGUSR2 with 41 s left before the job's time limit"
};

// Pure: the cause of a notice by `signal_number` with `left`.
NoticeCause classify_notice(int signal_number, const TimeLeft& left);
// The same, saying so in the detail when the time left is the one from the trial's start.
NoticeCause classify_notice(int signal_number, const JobTimeLeft& known);

// This job's time left: SLURM_JOB_END_TIME when Slurm exports it (newer releases), else
// `squeue -h -o %L -j $SLURM_JOB_ID` (at most 5 s), else DLX_JOB_END_TIME (dlx-launch's answer
// from the trial's start: right unless the time limit was changed since); unknown outside Slurm.
JobTimeLeft job_time_left();

}  // namespace dlx::detail
