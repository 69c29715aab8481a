// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/lost_trials.hpp"

#include <fmt/format.h>

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

}  // namespace dlx::launch
