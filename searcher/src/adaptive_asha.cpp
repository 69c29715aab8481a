// adaptive_asha: several ASHA brackets side by side, each with its own number of rungs, so that a
// search hedges against early stopping that is too aggressive for its learning curves (the
// Hyperband idea run asynchronously). The layout follows Determined's adaptive ASHA (facts from
// its documentation and master/pkg/searcher/adaptive_asha.go; the code here is ours):
//   - R = min(max_rungs, the rungs whose length is at least one unit, floor(log_divisor(max_trials)) + 1);
//   - mode picks the brackets' rung counts: aggressive {R}; standard {floor((R-1)/2)+1, ..., R};
//     conservative {1, ..., R}; most rungs first (the brackets that stop most, first);
//   - bracket b with r_b rungs gets trials in proportion to divisor^(r_b - 1) / r_b, about the same
//     training budget per bracket; floors, at least one trial each, the remainder to the first
//     bracket, so the brackets' trials add up to max_trials exactly.
// Every bracket is an ASHA bracket of the experiment's variant (stop_once or promotion), with
// asha_rungs(bracket trials, divisor, r_b, max_length). New trials are dealt out to the brackets
// interleaved in proportion to their shares (spread_trials_over_brackets), and the promotion
// variant resumes the highest pending promotion of any bracket first.
//
// max_concurrent_trials: Determined splits it across brackets; here it is the job array's
// throttle (`%N` in --array), which bounds the tickets running at once over all brackets
// together. ticket_count covers every bracket: max_trials plus each bracket's resume bound
// (asha.cpp).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "asha_layout.hpp"
#include "asha_method.hpp"
#include "method_factories.hpp"

namespace dlx::searcher::detail {

namespace {

// floor(log_divisor(value)) + 1, in integers: how many times value can be divided and stay >= 1.
int levels(std::int64_t value, int divisor) {
  int count = 1;
  for (; value / divisor >= 1; value /= divisor) ++count;
  return count;
}

std::vector<int> bracket_rung_counts(config::AshaOptions::Mode mode, int rungs) {
  int fewest = 1;
  if (mode == config::AshaOptions::Mode::aggressive) fewest = rungs;
  if (mode == config::AshaOptions::Mode::standard) fewest = (rungs - 1) / 2 + 1;
  std::vector<int> counts;
  for (int r = rungs; r >= fewest; --r) counts.push_back(r);
  return counts;
}

std::vector<int> bracket_trials(const std::vector<int>& rung_counts, int divisor, int max_trials) {
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
  // The at-least-one rule can overshoot by a few: take them back from the largest brackets.
  for (int excess = given - max_trials; excess > 0; --excess) {
    auto largest = std::max_element(trials.begin(), trials.end());
    if (*largest <= 1) break;
    --*largest;
  }
  return trials;
}

}  // namespace

std::vector<AshaBracketPlan> adaptive_asha_brackets(const config::Experiment& experiment) {
  const auto& searcher = experiment.searcher;
  const int divisor = searcher.asha.divisor;
  const std::int64_t max_length = searcher.max_length ? searcher.max_length->value : 1;
  const int fitting = static_cast<int>(asha_rungs(1, divisor, searcher.asha.max_rungs, max_length).size());
  const int rungs = std::min({searcher.asha.max_rungs, fitting, levels(searcher.max_trials, divisor)});
  const auto rung_counts = bracket_rung_counts(searcher.asha.mode, rungs);
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
