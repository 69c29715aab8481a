// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/slot_yield.hpp"

#include <chrono>
#include <string_view>
#include <utility>

namespace dlx::launch {

namespace {

// squeue's tasks of array job `array_job_id` in `states` (its -t); nullopt when it cannot say.
std::optional<std::map<int, slurm::ArrayTask>> ask_squeue(const std::string& array_job_id, std::string_view states) {
  auto listing = slurm::ask_array_tasks(array_job_id, states, std::chrono::seconds(10));
  if (listing.forgotten || !listing.why_unknown.empty()) return std::nullopt;
  return std::move(listing.tasks);
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
