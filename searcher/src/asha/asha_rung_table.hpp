// SPDX-License-Identifier: Apache-2.0
#pragma once
// One ASHA rung's results, best first, and the paused trials waiting there to be promoted.
// Results are kept in a sorted vector: a rank is a binary search, an insert a binary search plus
// one memmove (about 160 KB at 10,000 results, a few microseconds), never a re-sort.
#include <algorithm>
#include <cmath>
#include <compare>
#include <limits>
#include <set>
#include <vector>

namespace dlx::searcher::detail {

// The sort key of a raw metric: smaller is better. NaN (and a failure) ranks after every number.
inline double oriented_key(double metric, bool smaller_is_better) {
  if (std::isnan(metric)) return std::numeric_limits<double>::infinity();
  return smaller_is_better ? metric : -metric;
}

class RungTable {
 public:
  // Ordered by key, ties by trial id: the lower id ranks first, so results are deterministic.
  struct Entry {
    double key = 0;
    int trial = 0;
    friend auto operator<=>(const Entry&, const Entry&) = default;
  };

  // Records a result and returns its rank (0: the best so far).
  int insert(const Entry& entry) {
    auto at = std::lower_bound(results_.begin(), results_.end(), entry);
    const auto rank = at - results_.begin();
    results_.insert(at, entry);
    return static_cast<int>(rank);
  }

  // The rank of a recorded result: how many results are better.
  int rank(const Entry& entry) const {
    return static_cast<int>(std::lower_bound(results_.begin(), results_.end(), entry) - results_.begin());
  }

  int size() const { return static_cast<int>(results_.size()); }

  void add_waiting(const Entry& entry) { waiting_.insert(entry); }
  void remove_waiting(const Entry& entry) { waiting_.erase(entry); }
  // The best paused trial: if it cannot be promoted, no paused trial here can.
  const Entry* best_waiting() const { return waiting_.empty() ? nullptr : &*waiting_.begin(); }

 private:
  std::vector<Entry> results_;
  std::set<Entry> waiting_;
};

}  // namespace dlx::searcher::detail
