// SPDX-License-Identifier: Apache-2.0
#include "report_importance.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace dlx::cli::report {
namespace {

// Ranks 1..n of `values`, ties given their mean rank.
std::vector<double> ranks(const std::vector<double>& values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> rank(values.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    const double mean = (static_cast<double>(i + j) / 2.0) + 1.0;
    for (std::size_t k = i; k <= j; ++k) rank[order[k]] = mean;
    i = j + 1;
  }
  return rank;
}

// The group of each trial for one hyperparameter (-1: no value); `groups` gets their count.
std::vector<int> group_of(const std::vector<nlohmann::json>& column, std::size_t& groups) {
  std::vector<int> group(column.size(), -1);
  bool numeric = true;
  std::map<std::string, int> distinct;
  for (const auto& value : column) {
    if (value.is_null()) continue;
    if (!value.is_number()) numeric = false;
    distinct.emplace(value.dump(), 0);
  }
  if (!numeric || distinct.size() <= kMaxBins) {
    int next = 0;
    for (auto& [text, id] : distinct) id = next++;
    for (std::size_t i = 0; i < column.size(); ++i) {
      if (!column[i].is_null()) group[i] = distinct.at(column[i].dump());
    }
    groups = distinct.size();
    return group;
  }
  // Quantile bins: trials in value order, kMaxBins groups of equal counts (equal values stay
  // together, in the group of their first).
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < column.size(); ++i) {
    if (!column[i].is_null()) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return column[a].get<double>() < column[b].get<double>(); });
  for (std::size_t k = 0; k < order.size(); ++k) {
    const bool same = k > 0 && column[order[k]].get<double>() == column[order[k - 1]].get<double>();
    group[order[k]] = same ? group[order[k - 1]] : static_cast<int>(k * kMaxBins / order.size());
  }
  groups = kMaxBins;
  return group;
}

}  // namespace

std::vector<Importance> hyperparameter_importance(const ImportanceInput& input) {
  std::vector<Importance> scores;
  const std::size_t trials = input.results.size();
  if (trials < kMinTrials) return scores;
  const auto rank = ranks(input.results);
  for (std::size_t h = 0; h < input.names.size(); ++h) {
    std::vector<nlohmann::json> column(trials);
    for (std::size_t t = 0; t < trials; ++t) {
      if (h < input.values[t].size()) column[t] = input.values[t][h];
    }
    std::size_t groups = 0;
    const auto group = group_of(column, groups);
    // Only the trials with a value count (a hyperparameter added later is absent in older ones).
    std::vector<double> sum(groups, 0), count(groups, 0);
    double total = 0, n = 0;
    for (std::size_t t = 0; t < trials; ++t) {
      if (group[t] < 0) continue;
      sum[static_cast<std::size_t>(group[t])] += rank[t];
      count[static_cast<std::size_t>(group[t])] += 1;
      total += rank[t];
      n += 1;
    }
    std::size_t used_groups = 0;
    for (const double c : count) used_groups += c > 0 ? 1 : 0;
    if (used_groups < 2 || n < static_cast<double>(kMinTrials)) continue;  // constant here: explains nothing
    const double mean = total / n;
    double ss_total = 0, ss_between = 0;
    for (std::size_t t = 0; t < trials; ++t) {
      if (group[t] >= 0) ss_total += (rank[t] - mean) * (rank[t] - mean);
    }
    for (std::size_t g = 0; g < groups; ++g) {
      if (count[g] > 0) ss_between += count[g] * (sum[g] / count[g] - mean) * (sum[g] / count[g] - mean);
    }
    const double k = static_cast<double>(used_groups);
    const double ms_within = n > k ? (ss_total - ss_between) / (n - k) : 0;
    double score = ss_total > 0 ? (ss_between - (k - 1) * ms_within) / (ss_total + ms_within) : 0;
    scores.push_back({input.names[h], std::clamp(score, 0.0, 1.0), used_groups});
  }
  std::stable_sort(scores.begin(), scores.end(), [](const Importance& a, const Importance& b) { return a.score > b.score; });
  return scores;
}

}  // namespace dlx::cli::report
