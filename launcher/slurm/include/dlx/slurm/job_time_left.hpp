// SPDX-License-Identifier: Apache-2.0
#pragma once
// A job's time left before its time limit, as squeue tells it, and as an end time carried in a
// variable. The trainer needs it at a checkpoint signal to tell a time limit from a requeue or a
// preemption (launcher/sdk/src/notice_cause.hpp); slurmctld is busiest exactly then (a whole
// array requeued at once), so dlx-launch also asks once as the trial starts and hands the answer
// down as DLX_JOB_END_TIME, the fallback when squeue does not answer at the notice.
#include <chrono>
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>

namespace dlx::slurm {

// The job's time left: a number of seconds, no limit at all, or unknown.
struct TimeLeft {
  enum class Kind { seconds, unlimited, unknown } kind = Kind::unknown;
  std::int64_t seconds = 0;
};

// squeue's %L ("[days-]hours:minutes:seconds", "minutes:seconds", "UNLIMITED", "NOT_SET", ...).
TimeLeft parse_time_left(std::string_view text);

// `squeue -h -o %L -j <job>`, waiting at most `bound`; unknown on any failure (no squeue, no
// answer in time, an answer it cannot read). `job` is env::slurm_job_id's "<array job>_<task>"
// for an array task: the array's own job id (one of its tasks' SLURM_JOB_ID) lists every task.
TimeLeft ask_time_left(const std::string& job, std::chrono::milliseconds bound);

// DLX_JOB_END_TIME's value for `left` as seen at `now`: the end as unix seconds, "UNLIMITED", or
// "" when unknown (then the variable is not set).
std::string end_time_value(const TimeLeft& left, std::time_t now);

// The time left at `now` from an end time written by end_time_value (or Slurm's own
// SLURM_JOB_END_TIME, unix seconds); unknown when `value` is neither.
TimeLeft time_left_from_end(std::string_view value, std::time_t now);

}  // namespace dlx::slurm
