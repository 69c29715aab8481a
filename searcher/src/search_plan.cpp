// SPDX-License-Identifier: Apache-2.0
#include "dlx/searcher/search_plan.hpp"

#include "asha/asha_layout.hpp"
#include "dlx/searcher/method.hpp"
#include "dlx/searcher/trial_plan.hpp"
#include "pbt/pbt_round.hpp"

namespace dlx::searcher {

namespace {

std::vector<PlannedBracket> plan_brackets(const config::Experiment& experiment) {
  const auto layout = detail::asha_brackets(experiment);
  std::vector<PlannedBracket> brackets;
  for (const auto& bracket : layout) brackets.push_back({bracket.rungs, bracket.trials, {}});
  const auto bracket_of = detail::spread_trials_over_brackets(layout);
  for (std::size_t trial = 0; trial < bracket_of.size(); ++trial) {
    brackets[static_cast<std::size_t>(bracket_of[trial])].trial_ids.push_back(static_cast<int>(trial));
  }
  return brackets;
}

std::vector<PlannedPbtRound> plan_rounds(const config::Experiment& experiment) {
  const auto& pbt = experiment.searcher.pbt;
  std::vector<PlannedPbtRound> rounds;
  for (int round = 0; round < pbt.num_rounds; ++round) {
    PlannedPbtRound planned;
    planned.round = round;
    planned.first_ticket = round * pbt.population_size;
    const int replaced = round == 0 ? pbt.population_size : detail::pbt_truncate_count(pbt);
    planned.replaced = round == 0 ? 0 : replaced;
    planned.continued = pbt.population_size - replaced;
    const int first_new = detail::pbt_first_new_trial(pbt, round);
    for (int k = 0; k < replaced; ++k) planned.new_trials.push_back(first_new + k);
    rounds.push_back(std::move(planned));
  }
  return rounds;
}

}  // namespace

SearchPlan plan_search(const config::Experiment& experiment) {
  SearchPlan plan;
  plan.method = experiment.searcher.name;
  plan.trials = trial_count(experiment);
  plan.tickets = ticket_count(experiment);
  plan.tasks = array_task_count(experiment);
  plan.throttle = array_throttle(experiment);
  plan.array = array_spec(experiment);
  if (plan.method == config::SearcherName::async_halving || plan.method == config::SearcherName::adaptive_asha) {
    plan.brackets = plan_brackets(experiment);
  }
  if (plan.method == config::SearcherName::pbt) plan.rounds = plan_rounds(experiment);
  return plan;
}

}  // namespace dlx::searcher
