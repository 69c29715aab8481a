// SPDX-License-Identifier: Apache-2.0
#include "asha_layout.hpp"

#include <algorithm>
#include <cstdint>

namespace dlx::searcher::detail {

std::vector<AshaBracketPlan> asha_brackets(const config::Experiment& experiment) {
  const auto& searcher = experiment.searcher;
  if (searcher.name == config::SearcherName::adaptive_asha) return adaptive_asha_brackets(experiment);
  AshaBracketPlan bracket;
  bracket.trials = searcher.max_trials;
  bracket.rungs = asha_rungs(searcher.max_trials, searcher.asha.divisor, searcher.asha.max_rungs,
                             searcher.max_length ? searcher.max_length->value : 1);
  return {bracket};
}

std::vector<int> spread_trials_over_brackets(const std::vector<AshaBracketPlan>& brackets) {
  std::int64_t total = 0;
  for (const auto& bracket : brackets) total += bracket.trials;
  std::vector<int> given(brackets.size(), 0);
  std::vector<int> bracket_of;
  bracket_of.reserve(static_cast<std::size_t>(total));
  for (std::int64_t trial = 0; trial < total; ++trial) {
    // The bracket furthest behind its fair share of the first trial + 1 trials:
    // maximise (trial + 1) * share / total - given, compared exactly (scaled by total).
    std::size_t best = brackets.size();
    std::int64_t best_deficit = 0;
    for (std::size_t b = 0; b < brackets.size(); ++b) {
      if (given[b] >= brackets[b].trials) continue;
      const std::int64_t deficit = (trial + 1) * brackets[b].trials - std::int64_t{given[b]} * total;
      if (best == brackets.size() || deficit > best_deficit) {
        best = b;
        best_deficit = deficit;
      }
    }
    ++given[best];
    bracket_of.push_back(static_cast<int>(best));
  }
  return bracket_of;
}

int asha_resume_bound(const AshaBracketPlan& bracket, double divisor) {
  const int per_rung = std::max(1, asha_keep(bracket.trials, divisor));
  return static_cast<int>(bracket.rungs.size() - 1) * per_rung;
}

}  // namespace dlx::searcher::detail

namespace dlx::searcher::detail {

int asha_trial_total(const config::Experiment& experiment) {
  int total = 0;
  for (const auto& bracket : asha_brackets(experiment)) total += bracket.trials;
  return total;
}

}  // namespace dlx::searcher::detail
