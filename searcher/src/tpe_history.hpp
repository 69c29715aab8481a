#pragma once
// The results TPE learns from, and which of them a new trial's model uses.
//
// Methods report a trial at several lengths (ASHA at each rung), and results at different lengths
// do not compare: a loss after 10 batches is not a loss after 1000. So the model uses one length:
//   1. the largest length at which at least `startup_trials` trials have a result, each of those
//      trials counted once, with its result at that length (BOHB's rule: the longest budget with
//      enough observations);
//   2. else, when at least `startup_trials` trials have a result at some length but no single
//      length has that many (a trainer that picks its own, varying lengths), every trial with its
//      result at its largest length;
//   3. else none: still in the startup phase, new trials get random points.
// The chosen results are then ranked by the oriented metric (smaller_is_better); a result that is
// not a finite number (a diverged loss) ranks last. The best ceil(gamma * n), at least 1 and at
// most n - 1, are "good"; the rest are "bad".
#include <cstdint>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

namespace dlx::searcher::detail {

struct TpeSplit {
  std::int64_t length = 0;  // the length the model compares at; 0: each trial's largest (rule 2)
  std::vector<int> good;    // trial ids, best first
  std::vector<int> bad;
};

class TpeHistory {
 public:
  // The latest `metric` trial `trial` reported at `length` (raw, as the trainer reported it).
  void record(int trial, std::int64_t length, double metric);

  // The split a new trial's model uses, or an empty `good` while in the startup phase.
  TpeSplit split(int startup_trials, double gamma, bool smaller_is_better) const;

  nlohmann::json to_json() const;  // [[trial, length, metric or null], ...]
  static TpeHistory from_json(const nlohmann::json& json);

 private:
  std::map<int, std::map<std::int64_t, double>> results_;  // trial -> length -> metric
};

}  // namespace dlx::searcher::detail
