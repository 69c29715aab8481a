#include "pbt_round.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "methods.hpp"
#include "pbt_explore.hpp"
#include "sample_stream.hpp"

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

}  // namespace

int pbt_truncate_count(const config::PbtOptions& options) {
  // The epsilon keeps 0.3 x 10 at 3 although the product is 2.9999... in binary.
  return std::max(1, static_cast<int>(std::floor(options.truncate_fraction * options.population_size + 1e-9)));
}

std::vector<PbtTrialPlan> plan_first_round(const config::Experiment& experiment) {
  const auto& options = experiment.searcher.pbt;
  std::vector<PbtTrialPlan> plans;
  for (int member = 0; member < options.population_size; ++member) {
    PbtTrialPlan plan;
    plan.hparams = random_point(experiment, member);  // trial id = member in round 0
    plan.target_length = options.length_per_round.value;
    plan.reason = fmt::format("round 0: member {} starts from a random point", member);
    plans.push_back(std::move(plan));
  }
  return plans;
}

std::vector<PbtTrialPlan> plan_next_round(const config::Experiment& experiment, int round,
                                          const std::vector<PbtOutcome>& previous) {
  const auto& options = experiment.searcher.pbt;
  const int population = options.population_size;
  const bool smaller = experiment.searcher.smaller_is_better;
  std::vector<int> ranked;  // usable members, best first
  for (int member = 0; member < population; ++member) {
    if (previous[static_cast<std::size_t>(member)].usable) ranked.push_back(member);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [&](int a, int b) {
    double x = previous[static_cast<std::size_t>(a)].metric, y = previous[static_cast<std::size_t>(b)].metric;
    return smaller ? x < y : x > y;
  });
  const int count = static_cast<int>(ranked.size());
  const int truncate = pbt_truncate_count(options);
  const int parents = std::min(truncate, count);
  std::vector<int> rank_of(static_cast<std::size_t>(population), 0);  // 1-based; 0: no result
  for (int i = 0; i < count; ++i) rank_of[static_cast<std::size_t>(ranked[static_cast<std::size_t>(i)])] = i + 1;
  // Members without a result rank last, so they fill the bottom n first; every one of them is
  // replaced even beyond n (there is nothing of theirs to continue from).
  const int without_result = population - count;
  const int first_replaced_rank = std::max(parents, count - std::max(0, truncate - without_result)) + 1;

  std::vector<PbtTrialPlan> plans;
  for (int member = 0; member < population; ++member) {
    const int child = round * population + member;
    const int own_trial = (round - 1) * population + member;
    const PbtOutcome& own = previous[static_cast<std::size_t>(member)];
    const int rank = rank_of[static_cast<std::size_t>(member)];
    const std::string who = describe(experiment, member, own_trial, own, rank, count);
    PbtTrialPlan plan;
    if (count == 0) {
      plan.hparams = random_point(experiment, child);
      plan.reason = fmt::format("round {}: {} restarts from a random point: no member of round {} has a result",
                                round, who, round - 1);
    } else if (own.usable && rank < first_replaced_rank) {
      plan.hparams = own.hparams;
      plan.start_length = own.length;
      plan.checkpoint_trial = own_trial;
      plan.reason = fmt::format("round {}: {} continues from its checkpoint at length {}", round, who, own.length);
    } else {
      SampleStream stream(experiment.seed, static_cast<std::uint64_t>(child), kPbtSlotBase);
      const int parent = ranked[stream.next_below(static_cast<std::uint64_t>(parents))];
      const int parent_trial = (round - 1) * population + parent;
      const PbtOutcome& from = previous[static_cast<std::size_t>(parent)];
      Explored explored = explore(experiment, from.hparams, child);
      plan.hparams = std::move(explored.hparams);
      plan.start_length = from.length;
      plan.checkpoint_trial = parent_trial;
      plan.reason = fmt::format("round {}: {} exploits trial {} ({} {:.4g}, {}) and {}", round, who, parent_trial,
                                experiment.searcher.metric, from.metric, ordinal(rank_of[static_cast<std::size_t>(parent)]),
                                explored.changes.empty() ? "keeps its hyperparameters" : explored.changes);
    }
    plan.target_length = plan.start_length + options.length_per_round.value;
    plans.push_back(std::move(plan));
  }
  return plans;
}

}  // namespace dlx::searcher::detail
