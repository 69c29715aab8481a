// SPDX-License-Identifier: Apache-2.0
#include "dlx/searcher/asha_rungs.hpp"

#include <algorithm>
#include <cmath>

namespace dlx::searcher {

int asha_keep(int results, double divisor) {
  return static_cast<int>(static_cast<double>(results) / divisor);
}

std::vector<Rung> asha_rungs(int max_trials, double divisor, int max_rungs, std::int64_t max_length) {
  std::vector<std::int64_t> lengths;
  for (int k = 0; k < max_rungs; ++k) {
    // Determined: uint64(float64(maxLength) / math.Pow(divisor, numRungs-k-1)), at least 1.
    const double scaled = static_cast<double>(max_length) / std::pow(divisor, max_rungs - k - 1);
    const auto length = std::max<std::int64_t>(static_cast<std::int64_t>(scaled), 1);
    if (!lengths.empty() && lengths.back() == length) lengths.pop_back();  // keep one rung per length
    lengths.push_back(length);
  }
  std::vector<Rung> rungs(lengths.size());
  int trials = max_trials;
  for (std::size_t k = 0; k < rungs.size(); ++k) {
    rungs[k] = Rung{static_cast<int>(k), lengths[k], trials};
    trials = std::max(1, asha_keep(trials, divisor));
  }
  return rungs;
}

}  // namespace dlx::searcher
