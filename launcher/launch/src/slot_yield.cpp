// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/slot_yield.hpp"

#include <chrono>
#include <sstream>

#include "dlx/common/bounded_command.hpp"

namespace dlx::launch {

namespace {

// squeue's tasks of array job `array_job_id` in `states` (its -t), one line per task (-r).
std::optional<std::map<int, slurm::ArrayTask>> ask_squeue(const std::string& array_job_id, const char* states) {
  if (array_job_id.empty() || array_job_id.size() > 10 ||
      array_job_id.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  CommandLimits limits;
  limits.timeout = std::chrono::seconds(10);
  limits.max_output = std::size_t{16} << 20;
  try {
    const auto result = run_bounded({"squeue", "-h", "-r", "-t", states, "-j", array_job_id, "-O",
                                     "ArrayTaskID:16,State:24,Reason:64,RestartCnt:10"},
                                    limits, {{"LC_ALL", "C"}});
    if (result.exit_code != 0) return std::nullopt;
    return slurm::parse_array_tasks(result.out, true);
  } catch (const CommandError&) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<std::map<int, PendingTask>> pending_array_tasks(const std::string& array_job_id) {
  return ask_squeue(array_job_id, "PENDING");
}

std::optional<std::map<int, slurm::ArrayTask>> array_tasks_now(const std::string& array_job_id) {
  return ask_squeue(array_job_id, "all");
}

bool waits_for_its_turn(const PendingTask& task) {
  const auto& reason = task.reason;
  // NonZeroExitCode: a task requeued by its own exit (RequeueExit=85: a crash restart, or a
  // checkpoint on a notice) keeps that reason while it waits out its begin time (verified on the
  // local cluster, Slurm 22.05); `scontrol requeue` and preemption show BeginTime.
  return reason == "BeginTime" || reason == "JobArrayTaskLimit" || reason == "Priority" || reason == "Resources" ||
         reason == "None" || reason == "Reservation" || reason == "NonZeroExitCode";
}

std::optional<TrialToResume> trial_to_resume(const searcher::SearchState& state, int own_ticket,
                                             const std::map<int, PendingTask>& pending, int array_tasks) {
  const auto task_of = [array_tasks](int ticket) { return array_tasks > 0 ? ticket % array_tasks : ticket; };
  for (const auto& [id, trial] : state.trials()) {
    if (trial.status != "running" || !trial.ticket || task_of(*trial.ticket) == task_of(own_ticket)) continue;
    const auto task = pending.find(task_of(*trial.ticket));
    if (task != pending.end() && waits_for_its_turn(task->second)) {
      return TrialToResume{id, *trial.ticket, task->second.reason};
    }
  }
  return std::nullopt;
}

}  // namespace dlx::launch
