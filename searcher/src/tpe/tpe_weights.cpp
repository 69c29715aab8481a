// SPDX-License-Identifier: Apache-2.0
#include "tpe_weights.hpp"

#include <algorithm>
#include <cstddef>

namespace dlx::searcher::detail {

std::optional<double> pair_agreement(const std::vector<double>& predicted, const std::vector<double>& observed) {
  double agree = 0;
  long pairs = 0;
  for (std::size_t i = 0; i < observed.size(); ++i) {
    for (std::size_t j = 0; j < observed.size(); ++j) {
      if (!(observed[i] < observed[j])) continue;
      ++pairs;
      agree += predicted[i] > predicted[j] ? 1.0 : predicted[i] == predicted[j] ? 0.5 : 0.0;
    }
  }
  if (pairs == 0) return std::nullopt;
  return agree / static_cast<double>(pairs);
}

std::vector<double> level_weights(const std::vector<std::optional<double>>& agreements) {
  std::vector<double> weights;
  double total = 0;
  for (const auto& share : agreements) {
    weights.push_back(share ? std::max(0.0, 2 * *share - 1) : 0.0);
    total += weights.back();
  }
  if (weights.empty()) return weights;
  if (total <= 0) {
    std::fill(weights.begin(), weights.end(), 0.0);
    weights.back() = 1;
    return weights;
  }
  for (double& w : weights) w /= total;
  return weights;
}

}  // namespace dlx::searcher::detail
