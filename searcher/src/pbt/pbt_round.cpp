// SPDX-License-Identifier: Apache-2.0
#include "pbt_round.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "methods.hpp"
#include "pbt_explore.hpp"

namespace dlx::searcher::detail {

namespace {

std::string ordinal(int n) {
  const int tens = n % 100, ones = n % 10;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th" : ones == 1 ? "st" : ones == 2 ? "nd" : ones == 3 ? "rd" : "th";
  return fmt::format("{}{}", n, suffix);
}

// Member m of round r: "member 3 (trial 11, loss 0.42, 7th of 8)" or "member 3 (trial 11 failed)".
std::string describe(const config::Experiment& experiment, int member, int trial, const PbtOutcome& outcome,
                     int rank, int ranked) {
  if (!outcome.usable) return fmt::format("member {} (trial {} has no result)", member, trial);
  return fmt::format("member {} (trial {}, {} {:.4g}, {} of {})", member, trial, experiment.searcher.metric,
                     outcome.metric, ordinal(rank), ranked);
}

// The previous round's members ranked: best first, members without a result last, ties by trial.
struct RoundRanking {
  std::vector<int> ranking;    // every member, best first
  std::vector<int> usable;     // the members with a result, best first
  std::vector<int> rank_of;    // member -> 1-based rank among the usable (0: none)
  std::vector<bool> replaced;  // member -> replaced in the next round (the bottom truncate, or no result)
};

RoundRanking rank_round(const config::Experiment& experiment, const std::vector<PbtOutcome>& previous) {
  const auto& options = experiment.searcher.pbt;
  const int population = options.population_size;
  const bool smaller = experiment.searcher.smaller_is_better;
  const auto at = [](int index) { return static_cast<std::size_t>(index); };
  RoundRanking out;
  out.ranking.resize(at(population));
  for (int member = 0; member < population; ++member) out.ranking[at(member)] = member;
  std::sort(out.ranking.begin(), out.ranking.end(), [&](int a, int b) {
    const PbtOutcome& x = previous[at(a)];
    const PbtOutcome& y = previous[at(b)];
    if (x.usable != y.usable) return x.usable;
    if (x.usable && x.metric != y.metric) return smaller ? x.metric < y.metric : x.metric > y.metric;
    return x.trial < y.trial;
  });
  for (int member : out.ranking) {
    if (previous[at(member)].usable) out.usable.push_back(member);
  }
  out.rank_of.assign(at(population), 0);
  for (std::size_t i = 0; i < out.usable.size(); ++i) out.rank_of[at(out.usable[i])] = static_cast<int>(i) + 1;
  out.replaced.assign(at(population), false);
  const int truncate = pbt_truncate_count(options);
  for (int i = 0; i < population; ++i) {
    const int member = out.ranking[at(i)];
    out.replaced[at(member)] = i >= population - truncate || !previous[at(member)].usable;
  }
  return out;
}

}  // namespace

int pbt_truncate_count(const config::PbtOptions& options) {
  // Determined: int(TruncateFraction * float64(PopulationSize)), truncated toward zero.
  return static_cast<int>(options.truncate_fraction * static_cast<double>(options.population_size));
}

int pbt_first_new_trial(const config::PbtOptions& options, int round) {
  return round == 0 ? 0 : options.population_size + (round - 1) * pbt_truncate_count(options);
}

int pbt_trial_total(const config::PbtOptions& options) {
  return pbt_first_new_trial(options, options.num_rounds);
}

std::vector<PbtTrialPlan> plan_first_round(const config::Experiment& experiment) {
  const auto& options = experiment.searcher.pbt;
  std::vector<PbtTrialPlan> plans;
  for (int member = 0; member < options.population_size; ++member) {
    PbtTrialPlan plan;
    plan.trial = member;
    plan.hparams = random_point(experiment, member);
    plan.target_length = options.length_per_round.value;
    plan.reason = fmt::format("round 0: member {} starts trial {} from a random point", member, member);
    plans.push_back(std::move(plan));
  }
  return plans;
}

std::vector<PbtTrialPlan> plan_next_round(const config::Experiment& experiment, int round,
                                          const std::vector<PbtOutcome>& previous, int next_trial) {
  const auto& options = experiment.searcher.pbt;
  const RoundRanking ranked = rank_round(experiment, previous);
  const int count = static_cast<int>(ranked.usable.size());
  std::vector<PbtTrialPlan> plans;
  int copies = 0;
  for (int member = 0; member < options.population_size; ++member) {
    const PbtOutcome& own = previous[static_cast<std::size_t>(member)];
    const std::string who = describe(experiment, member, own.trial, own, ranked.rank_of[static_cast<std::size_t>(member)],
                                     count);
    PbtTrialPlan plan;
    if (count == 0) {
      plan.trial = next_trial++;
      plan.hparams = random_point(experiment, plan.trial);
      plan.reason = fmt::format("round {}: {} restarts as trial {} from a random point: no member of round {} has a "
                                "result", round, who, plan.trial, round - 1);
    } else if (!ranked.replaced[static_cast<std::size_t>(member)]) {
      plan.trial = own.trial;
      plan.hparams = own.hparams;
      plan.start_length = own.length;
      plan.checkpoint_trial = own.trial;
      plan.reason = fmt::format("round {}: {} continues from its checkpoint at length {}", round, who, own.length);
    } else {
      const int parent = ranked.usable[static_cast<std::size_t>(copies++ % count)];
      const PbtOutcome& from = previous[static_cast<std::size_t>(parent)];
      plan.trial = next_trial++;
      Explored explored = explore(experiment, from.hparams, plan.trial);
      plan.hparams = std::move(explored.hparams);
      plan.start_length = from.length;
      plan.checkpoint_trial = from.trial;
      plan.reason = fmt::format("round {}: {} is replaced by trial {}, a copy of trial {} ({} {:.4g}, {}) that {}",
                                round, who, plan.trial, from.trial, experiment.searcher.metric, from.metric,
                                ordinal(ranked.rank_of[static_cast<std::size_t>(parent)]),
                                explored.changes.empty() ? "keeps its hyperparameters" : explored.changes);
    }
    plan.target_length = plan.start_length + options.length_per_round.value;
    plans.push_back(std::move(plan));
  }
  return plans;
}

}  // namespace dlx::searcher::detail
