// SPDX-License-Identifier: Apache-2.0
#pragma once
// The results TPE learns from, and which of them the models use.
//
// Methods report a trial at several lengths (ASHA at each rung), and results at different lengths
// do not compare: a loss after 10 batches is not a loss after 1000. So each model is fitted to
// the results at one length (tpe_sampler.cpp combines them):
//   1. every length at which at least `startup_trials` trials have a result is a "level", each of
//      its trials counted once with its result there; the largest such length is the top level
//      (BOHB's rule: the longest budget with enough observations);
//   2. else, when at least `startup_trials` trials have a result at some length but no single
//      length has that many (a trainer that picks its own, varying lengths), one level of every
//      trial with its result at its largest length (length 0);
//   3. else none: still in the startup phase, new trials get random points.
// A level keeps at most `cap` results, those of its newest (highest-numbered) trials, so that a
// model's cost stays bounded however long the experiment runs (the short rungs of ASHA collect a
// result from nearly every trial). Results are ranked by the oriented metric (smaller_is_better);
// a result that is not a finite number (a diverged loss) ranks last. split(): the best
// ceil(gamma * n), at least 1 and at most n - 1, are "good"; the rest are "bad".
#include <cstdint>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

namespace dlx::searcher::detail {

struct TpeResult {
  double oriented = 0;  // smaller is better; +infinity for a result that is not a finite number
  int trial = 0;
};

struct TpeLevel {
  std::int64_t length = 0;         // 0: each trial's largest length (rule 2)
  std::vector<TpeResult> ranked;   // best first; ties: the lower trial id first
};

struct TpeSplit {
  std::int64_t length = 0;  // the length the model compares at; 0: each trial's largest (rule 2)
  std::vector<int> good;    // trial ids, best first
  std::vector<int> bad;
};

// The good/bad split of a level's ranked results (at least 2 of them).
TpeSplit split_level(const TpeLevel& level, double gamma);

class TpeHistory {
 public:
  // The latest `metric` trial `trial` reported at `length` (raw, as the trainer reported it).
  void record(int trial, std::int64_t length, double metric);

  // The levels the models use, shortest length first (rules 1-3 above); empty in the startup phase.
  std::vector<TpeLevel> levels(int startup_trials, bool smaller_is_better, std::size_t cap) const;

  nlohmann::json to_json() const;  // [[trial, length, metric or null], ...]
  static TpeHistory from_json(const nlohmann::json& json);

 private:
  std::map<int, std::map<std::int64_t, double>> results_;   // trial -> length -> metric
  std::map<std::int64_t, std::map<int, double>> by_length_;  // length -> trial -> metric (the same)
};

}  // namespace dlx::searcher::detail
