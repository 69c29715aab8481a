#include "tpe_history.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace dlx::searcher::detail {

namespace {

// Smaller is better after orientation; anything not finite is the worst result there is.
double oriented(double metric, bool smaller_is_better) {
  if (!std::isfinite(metric)) return std::numeric_limits<double>::infinity();
  return smaller_is_better ? metric : -metric;
}

}  // namespace

void TpeHistory::record(int trial, std::int64_t length, double metric) { results_[trial][length] = metric; }

TpeSplit TpeHistory::split(int startup_trials, double gamma, bool smaller_is_better) const {
  TpeSplit out;
  std::map<std::int64_t, int> trials_at;  // length -> trials with a result there
  for (const auto& [trial, by_length] : results_) {
    for (const auto& entry : by_length) ++trials_at[entry.first];
  }
  std::vector<std::pair<double, int>> ranked;  // (oriented metric, trial)
  auto enough = std::find_if(trials_at.rbegin(), trials_at.rend(),
                             [&](const auto& entry) { return entry.second >= startup_trials; });
  if (enough != trials_at.rend()) {
    out.length = enough->first;
    for (const auto& [trial, by_length] : results_) {
      if (auto it = by_length.find(out.length); it != by_length.end()) {
        ranked.emplace_back(oriented(it->second, smaller_is_better), trial);
      }
    }
  } else if (static_cast<int>(results_.size()) >= startup_trials) {
    for (const auto& [trial, by_length] : results_) {
      ranked.emplace_back(oriented(by_length.rbegin()->second, smaller_is_better), trial);
    }
  } else {
    return out;
  }
  std::sort(ranked.begin(), ranked.end());  // ties: the lower trial id first
  const auto n = static_cast<std::ptrdiff_t>(ranked.size());
  const auto good = std::clamp<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(std::ceil(gamma * static_cast<double>(n))),
                                               1, n - 1);
  for (std::ptrdiff_t i = 0; i < n; ++i) (i < good ? out.good : out.bad).push_back(ranked[static_cast<std::size_t>(i)].second);
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
    history.record(row.at(0).get<int>(), row.at(1).get<std::int64_t>(), metric);
  }
  return history;
}

}  // namespace dlx::searcher::detail
