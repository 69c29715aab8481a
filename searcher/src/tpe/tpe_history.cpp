// SPDX-License-Identifier: Apache-2.0
#include "tpe_history.hpp"
#include "json_fields.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

namespace dlx::searcher::detail {

namespace {

// Smaller is better after orientation; anything not finite is the worst result there is.
double oriented(double metric, bool smaller_is_better) {
  if (!std::isfinite(metric)) return std::numeric_limits<double>::infinity();
  return smaller_is_better ? metric : -metric;
}

void rank(TpeLevel& level) {
  std::sort(level.ranked.begin(), level.ranked.end(), [](const TpeResult& a, const TpeResult& b) {
    return a.oriented != b.oriented ? a.oriented < b.oriented : a.trial < b.trial;
  });
}

}  // namespace

TpeSplit split_level(const TpeLevel& level, double gamma) {
  TpeSplit out;
  out.length = level.length;
  const auto n = static_cast<std::ptrdiff_t>(level.ranked.size());
  const auto good = std::clamp<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(std::ceil(gamma * static_cast<double>(n))),
                                               1, n - 1);
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    (i < good ? out.good : out.bad).push_back(level.ranked[static_cast<std::size_t>(i)].trial);
  }
  return out;
}

void TpeHistory::record(int trial, std::int64_t length, double metric) {
  results_[trial][length] = metric;
  by_length_[length][trial] = metric;
}

std::vector<TpeLevel> TpeHistory::levels(int startup_trials, bool smaller_is_better, std::size_t cap) const {
  std::vector<TpeLevel> out;
  const auto enough = static_cast<std::size_t>(std::max(startup_trials, 2));  // a split needs two
  for (const auto& [length, by_trial] : by_length_) {
    if (by_trial.size() < enough) continue;
    TpeLevel level;
    level.length = length;
    auto first = by_trial.begin();
    if (by_trial.size() > cap) first = std::prev(by_trial.end(), static_cast<std::ptrdiff_t>(cap));
    for (auto it = first; it != by_trial.end(); ++it) level.ranked.push_back({oriented(it->second, smaller_is_better), it->first});
    rank(level);
    out.push_back(std::move(level));
  }
  if (out.empty() && results_.size() >= enough) {
    TpeLevel level;  // rule 2: every trial at its largest length
    auto first = results_.begin();
    if (results_.size() > cap) first = std::prev(results_.end(), static_cast<std::ptrdiff_t>(cap));
    for (auto it = first; it != results_.end(); ++it) {
      level.ranked.push_back({oriented(it->second.rbegin()->second, smaller_is_better), it->first});
    }
    rank(level);
    out.push_back(std::move(level));
  }
  return out;
}

nlohmann::json TpeHistory::to_json() const {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& [trial, by_length] : results_) {
    for (const auto& [length, metric] : by_length) {
      // JSON has no NaN or infinity: a non-finite metric is stored as null (it ranks last anyway).
      rows.push_back({trial, length, std::isfinite(metric) ? nlohmann::json(metric) : nlohmann::json(nullptr)});
    }
  }
  return rows;
}

TpeHistory TpeHistory::from_json(const nlohmann::json& json) {
  TpeHistory history;
  for (const auto& row : json) {
    double metric = row.at(2).is_null() ? std::numeric_limits<double>::quiet_NaN() : row.at(2).get<double>();
    history.record(json_as_int(row.at(0), "TPE history"), json_as_int64(row.at(1), "TPE history"), metric);
  }
  return history;
}

}  // namespace dlx::searcher::detail
