// SPDX-License-Identifier: Apache-2.0
#include "notice_cause.hpp"

#include <signal.h>

#include <cstdlib>
#include <ctime>

#include <fmt/format.h>

#include "dlx/common/signal_name.hpp"
#include "dlx/env/environment.hpp"
#include "dlx/env/trial_environment.hpp"

namespace dlx::detail {
namespace {

std::string signal_text(int signal_number) {
  if (signal_number <= 0) return "no signal";
  return signal_name(signal_number);
}

}  // namespace

NoticeCause classify_notice(int signal_number, const TimeLeft& left) {
  const auto signal = signal_text(signal_number);
  const bool near_limit = left.kind == TimeLeft::Kind::seconds && left.seconds <= kTimeLimitWindow.count();
  if (signal_number <= 0 && !near_limit) {
    // No signal that rank 0 knows of: another rank's, agreed on by the program's framework without
    // note_checkpoint_signal, or checkpoint_and_exit called without one. The signal is what tells
    // a requeue from a preemption, so this says neither.
    return {"notice", "no signal reached rank 0 (another rank's, when the program agreed on it without "
                      "note_checkpoint_signal, or checkpoint_and_exit without a signal); preemption, time limit "
                      "or requeue"};
  }
  switch (left.kind) {
    case TimeLeft::Kind::seconds:
      if (near_limit)
        return {"time_limit", fmt::format("{} with {} s left before the job's time limit", signal, left.seconds)};
      if (signal_number == SIGTERM)
        return {"requeue", fmt::format("{} with {} s left before the time limit (scontrol requeue, scancel, or a "
                                       "preemption without preempt_send_user_signal)", signal, left.seconds)};
      return {"preemption", fmt::format("{} with {} s left before the time limit", signal, left.seconds)};
    case TimeLeft::Kind::unlimited:
      if (signal_number == SIGTERM)
        return {"requeue", fmt::format("{}, no time limit (scontrol requeue, scancel, or a preemption without "
                                       "preempt_send_user_signal)", signal)};
      return {"preemption", fmt::format("{}, no time limit", signal)};
    case TimeLeft::Kind::unknown: break;
  }
  return {"notice", fmt::format("{}; the job's time left is unknown (preemption, time limit or requeue)", signal)};
}

NoticeCause classify_notice(int signal_number, const JobTimeLeft& known) {
  auto cause = classify_notice(signal_number, known.left);
  if (known.as_of_start && known.left.kind != TimeLeft::Kind::unknown) {
    cause.detail += " (squeue did not answer at the notice: the time limit as of the trial's start)";
  }
  return cause;
}

JobTimeLeft job_time_left() {
  const auto now = std::time(nullptr);
  if (const char* end = std::getenv("SLURM_JOB_END_TIME")) {
    if (const auto left = slurm::time_left_from_end(end, now); left.kind != TimeLeft::Kind::unknown) return {left};
  }
  const auto job = env::slurm_job_id(env::current_environment());
  if (job.empty()) return {};
  // Asked once, after the checkpoint is saved, well inside Slurm's KillWait (30 s by default);
  // a slurmctld busy with a whole array's requeues has been seen to take over 2 s to answer.
  if (const auto left = slurm::ask_time_left(job, std::chrono::milliseconds(5000)); left.kind != TimeLeft::Kind::unknown) {
    return {left};
  }
  const char* at_start = std::getenv("DLX_JOB_END_TIME");
  return {at_start ? slurm::time_left_from_end(at_start, now) : TimeLeft{}, true};
}

}  // namespace dlx::detail
