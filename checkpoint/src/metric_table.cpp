#include <algorithm>
#include <cmath>
#include <limits>

#include "dlx/checkpoint/trial_record.hpp"

namespace dlx::checkpoint {

void MetricTable::open_row(std::int64_t step, double wall_time) {
  constexpr double absent = std::numeric_limits<double>::quiet_NaN();
  const std::size_t rows_before = steps.size();
  steps.push_back(step);
  wall_times.resize(rows_before, absent);
  wall_times.push_back(wall_time);
  for (auto& [name, column] : columns) {
    column.resize(rows_before, absent);  // repair a column that fell behind
    column.push_back(absent);
  }
}

void MetricTable::append(std::int64_t step, const std::map<std::string, double>& values,
                         double wall_time) {
  open_row(step, wall_time);
  for (const auto& [name, value] : values) {
    columns.try_emplace(name, steps.size(), std::numeric_limits<double>::quiet_NaN())
        .first->second.back() = value;
  }
}

void MetricTable::drop_from(std::int64_t step) {
  // Steps grow within a table (a smaller one drops the rows it replays first): the rows kept
  // are those before the first at or after `step`.
  const auto keep = static_cast<std::size_t>(
      std::find_if(steps.begin(), steps.end(), [step](std::int64_t s) { return s >= step; }) -
      steps.begin());
  steps.resize(keep);
  wall_times.resize(keep);
  for (auto& [name, column] : columns) column.resize(keep);
}

std::optional<double> MetricTable::last(const std::string& metric) const {
  auto column = columns.find(metric);
  if (column == columns.end()) return std::nullopt;
  for (auto value = column->second.rbegin(); value != column->second.rend(); ++value)
    if (!std::isnan(*value)) return *value;
  return std::nullopt;
}

std::optional<double> MetricTable::best(const std::string& metric, bool smaller_is_better) const {
  auto column = columns.find(metric);
  if (column == columns.end()) return std::nullopt;
  std::optional<double> best;
  for (double value : column->second) {
    if (std::isnan(value)) continue;
    if (!best || (smaller_is_better ? value < *best : value > *best)) best = value;
  }
  return best;
}

}  // namespace dlx::checkpoint
