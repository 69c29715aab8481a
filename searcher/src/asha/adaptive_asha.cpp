// SPDX-License-Identifier: Apache-2.0
// adaptive_asha: several ASHA brackets side by side, each with its own number of rungs, so that a
// search hedges against early stopping that is too aggressive for its learning curves (the
// Hyperband idea run asynchronously). The layout is Determined's adaptive ASHA (facts from
// master/pkg/searcher/adaptive_asha.go, makeBrackets and getBracketMaxTrials; the code is ours):
//   - rung counts: bracket_rungs when given; else with
//       R = min(max_rungs, int(ln(max_length) / ln(divisor)) + 1, int(ln(max_trials) / ln(divisor)) + 1)
//     (in doubles, as Determined computes them: ln(1000) / ln(10) is 2.9999999999999996, so
//     max_length 1000 with divisor 10 allows 3 rungs, not 4), mode picks aggressive {R},
//     standard {floor((R-1)/2)+1, ..., R}, conservative {1, ..., R};
//   - the brackets sorted by rung count, most first (the brackets that stop most start first);
//   - bracket b with r_b rungs gets max(1, int(w_b / sum(w) x max_trials)) trials, with
//     w_b = divisor^(r_b - 1) / r_b (about the same training budget per bracket), and the
//     remainder max(0, max_trials - the sum) goes to the first bracket. So the brackets' trials add
//     up to max_trials, except with more explicit bracket_rungs than max_trials covers: each still
//     gets one trial (Determined does the same).
// Every bracket is an ASHA bracket of the experiment's variant (stop_once or promotion), with
// asha_rungs(bracket trials, divisor, r_b, max_length). New trials are dealt out to the brackets
// interleaved in proportion to their shares (spread_trials_over_brackets), and the promotion
// variant resumes the highest pending promotion of any bracket first.
//
// max_concurrent_trials: Determined splits it across brackets; here it is the job array's
// throttle (`%N` in --array), which bounds the tickets running at once over all brackets
// together. ticket_count covers every bracket: the trials plus each bracket's resume bound
// (asha.cpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>

#include "asha_layout.hpp"
#include "asha_method.hpp"
#include "method_factories.hpp"

namespace dlx::searcher::detail {

namespace {

// int(ln(value) / ln(divisor)) + 1 in doubles: Determined's "the top rung holds at least one".
int determined_levels(double value, double divisor) {
  return static_cast<int>(std::log(value) / std::log(divisor)) + 1;
}

std::vector<int> bracket_rung_counts(config::AshaOptions::Mode mode, int rungs) {
  int fewest = 1;
  if (mode == config::AshaOptions::Mode::aggressive) fewest = rungs;
  if (mode == config::AshaOptions::Mode::standard) fewest = (rungs - 1) / 2 + 1;
  std::vector<int> counts;
  for (int r = fewest; r <= rungs; ++r) counts.push_back(r);
  return counts;
}

std::vector<int> bracket_trials(const std::vector<int>& rung_counts, double divisor, int max_trials) {
  std::vector<double> weights;
  double total = 0;
  for (int rungs : rung_counts) {
    weights.push_back(std::pow(divisor, rungs - 1) / rungs);
    total += weights.back();
  }
  std::vector<int> trials;
  int given = 0;
  for (double weight : weights) {
    trials.push_back(std::max(1, static_cast<int>(weight / total * max_trials)));
    given += trials.back();
  }
  trials.front() += std::max(0, max_trials - given);
  return trials;
}

}  // namespace

std::vector<AshaBracketPlan> adaptive_asha_brackets(const config::Experiment& experiment) {
  const auto& searcher = experiment.searcher;
  const double divisor = searcher.asha.divisor;
  const std::int64_t max_length = searcher.max_length ? searcher.max_length->value : 1;
  auto rung_counts = searcher.asha.bracket_rungs;
  if (rung_counts.empty()) {
    const int rungs = std::min({searcher.asha.max_rungs, determined_levels(static_cast<double>(max_length), divisor),
                                determined_levels(searcher.max_trials, divisor)});
    rung_counts = bracket_rung_counts(searcher.asha.mode, std::max(rungs, 1));
  }
  std::stable_sort(rung_counts.begin(), rung_counts.end(), std::greater<>());
  const auto trials = bracket_trials(rung_counts, divisor, searcher.max_trials);
  std::vector<AshaBracketPlan> brackets;
  for (std::size_t b = 0; b < rung_counts.size(); ++b) {
    brackets.push_back({asha_rungs(trials[b], divisor, rung_counts[b], max_length), trials[b]});
  }
  return brackets;
}

std::unique_ptr<Method> make_adaptive_asha_method(const config::Experiment& experiment) {
  return std::make_unique<AshaMethod>(experiment, adaptive_asha_brackets(experiment));
}

}  // namespace dlx::searcher::detail
