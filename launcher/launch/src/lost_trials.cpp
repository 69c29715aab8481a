// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/lost_trials.hpp"

#include <fmt/format.h>

#include "dlx/launch/slot_yield.hpp"
#include "dlx/searcher/trial_plan.hpp"

namespace dlx::launch {

std::vector<LostTrial> suspect_lost_trials(const searcher::SearchState& state, const config::Experiment& experiment,
                                           const std::map<int, slurm::ArrayTask>& tasks, int own_task) {
  std::vector<LostTrial> suspects;
  const auto own = tasks.find(own_task);
  if (own == tasks.end() || slurm::task_has_ended(own->second)) return suspects;
  for (const auto& [id, trial] : state.trials()) {
    const bool unfinished = trial.status == "running" || (trial.status == "paused" && !trial.settled);
    if (!unfinished || !trial.ticket) continue;
    const int task = searcher::task_of_ticket(experiment, *trial.ticket);
    if (task == own_task) continue;
    const auto listed = tasks.find(task);
    if (listed != tasks.end() && !slurm::task_has_ended(listed->second)) continue;
    suspects.push_back({trial, task, listed == tasks.end() ? "" : listed->second.state});
  }
  return suspects;
}

std::vector<LostTrial> LostTrialWatch::confirm(const std::vector<LostTrial>& suspects, Clock::time_point now) {
  std::map<int, std::pair<LostTrial, Clock::time_point>> still;
  std::vector<LostTrial> lost;
  for (const auto& suspect : suspects) {
    const auto& seen = suspect.seen;
    auto since = now;
    if (const auto earlier = first_seen_.find(seen.id); earlier != first_seen_.end()) {
      const auto& before = earlier->second.first.seen;
      // Changed in the journal meanwhile (it reported, or was resumed and lost again): from now.
      const bool same = before.status == seen.status && before.ticket == seen.ticket &&
                        before.last_length == seen.last_length && before.settled == seen.settled;
      if (same) since = earlier->second.second;
    }
    still.emplace(seen.id, std::make_pair(suspect, since));
    if (now - since >= confirm_after_) lost.push_back(suspect);
  }
  first_seen_ = std::move(still);
  return lost;
}

std::string lost_trial_detail(const LostTrial& lost, const std::string& array_job_id, int reporting_ticket) {
  const auto task = fmt::format("{}_{}", array_job_id, lost.task);
  const auto what = lost.task_state.empty()
                        ? fmt::format("its array task {} ended and Slurm no longer lists it", task)
                        : fmt::format("its array task {} ended ({})", task, lost.task_state);
  const auto left = lost.seen.status == "paused" ? "its pause is settled for it, so that it can be promoted"
                                                 : "no run will continue it";
  return fmt::format("lost: {} without reporting to the searcher; {} (found by ticket {})", what, left,
                     reporting_ticket);
}

LostTrialLookout::LostTrialLookout(const env::EnvMap& env, bool enabled)
    : array_job_(env::lookup(env, "SLURM_ARRAY_JOB_ID").value_or("")),
      period_(env::lookup_int(env, "DLX_LOST_TRIAL_CHECK_S").value_or(kLostTrialCheckPeriod.count())),
      watch_(2 * period_),
      next_check_(LostTrialWatch::Clock::now()) {
  const auto own_task = env::lookup_int(env, "SLURM_ARRAY_TASK_ID");
  if (!enabled || array_job_.empty() || !own_task || period_.count() <= 0) return;
  own_task_ = *own_task;
}

bool LostTrialLookout::report_if_due(searcher::Coordinator& coordinator, const config::Experiment& experiment,
                                     int ticket, std::FILE* log) {
  const auto now = LostTrialWatch::Clock::now();
  if (own_task_ < 0 || now < next_check_) return false;
  next_check_ = now + period_;
  const auto tasks = array_tasks_now(array_job_);
  if (!tasks) return false;  // squeue cannot say now: nothing is judged on it
  bool reported = false;
  for (const auto& lost : watch_.confirm(suspect_lost_trials(coordinator.state(), experiment, *tasks, own_task_), now)) {
    const auto detail = lost_trial_detail(lost, array_job_, ticket);
    if (!coordinator.report_lost(lost.seen, detail)) continue;  // it moved, or another ticket was first
    reported = true;
    if (log) fmt::print(log, "dlx-launch: ticket {}: trial {} is {}\n", ticket, lost.seen.id, detail);
  }
  return reported;
}

}  // namespace dlx::launch
