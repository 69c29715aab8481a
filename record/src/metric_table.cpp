// SPDX-License-Identifier: Apache-2.0
#include "dlx/record/metric_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "dlx/record/error.hpp"

namespace dlx::record {
namespace {

constexpr std::size_t kNoCell = std::numeric_limits<std::size_t>::max();

bool same_double(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

}  // namespace

std::span<const MetricCell> MetricTable::cells(std::size_t row) const {
  return std::span(cells_).subspan(row_begin(row), row_ends_[row] - row_begin(row));
}

std::optional<std::uint32_t> MetricTable::index_of(std::string_view name) const {
  const auto found = index_.find(name);
  if (found == index_.end()) return std::nullopt;
  return found->second;
}

std::uint32_t MetricTable::add_name(std::string_view name) {
  if (const auto found = index_.find(name); found != index_.end()) return found->second;
  if (names_.size() >= kMaxMetricNames)
    throw RecordError(fmt::format("more than {} metric names in one table", kMaxMetricNames));
  const auto metric = static_cast<std::uint32_t>(names_.size());
  names_.emplace_back(name);
  index_.emplace(names_.back(), metric);
  open_cell_.push_back(kNoCell);
  return metric;
}

void MetricTable::open_row(std::int64_t step, double wall_time) {
  if (!steps_.empty() && step <= steps_.back()) drop_from(step);
  steps_.push_back(step);
  wall_times_.push_back(wall_time);
  row_ends_.push_back(cells_.size());
}

void MetricTable::set(std::uint32_t metric, double value) {
  if (steps_.empty()) throw RecordError("a metric value was set before any row was opened");
  if (metric >= names_.size())
    throw RecordError(fmt::format("metric index {} is not one of the table's {} names", metric, names_.size()));
  // open_cell_ may be stale (a row dropped since): it counts only when it points into the open
  // row at this metric's cell.
  const auto at = open_cell_[metric];
  if (at != kNoCell && at >= row_begin(rows() - 1) && at < cells_.size() && cells_[at].metric == metric) {
    cells_[at].value = value;
    return;
  }
  open_cell_[metric] = cells_.size();
  cells_.push_back({metric, value});
  row_ends_.back() = cells_.size();
}

void MetricTable::append(std::int64_t step, const std::map<std::string, double>& values, double wall_time) {
  open_row(step, wall_time);
  for (const auto& [name, value] : values) set(add_name(name), value);
}

void MetricTable::drop_from(std::int64_t step) {
  // Steps are strictly increasing: the rows kept are those before the first step >= `step`.
  const auto keep = first_step_at_or_after(steps_, step);
  if (keep == steps_.size()) return;
  cells_.resize(row_begin(keep));
  steps_.resize(keep);
  wall_times_.resize(keep);
  row_ends_.resize(keep);
}

void MetricTable::clear_rows() { drop_from(std::numeric_limits<std::int64_t>::min()); }

void MetricTable::drop_first_rows(std::size_t count) {
  count = std::min(count, rows());
  if (count == 0) return;
  const auto first_cell = row_begin(count);
  cells_.erase(cells_.begin(), cells_.begin() + static_cast<std::ptrdiff_t>(first_cell));
  steps_.erase(steps_.begin(), steps_.begin() + static_cast<std::ptrdiff_t>(count));
  wall_times_.erase(wall_times_.begin(), wall_times_.begin() + static_cast<std::ptrdiff_t>(count));
  row_ends_.erase(row_ends_.begin(), row_ends_.begin() + static_cast<std::ptrdiff_t>(count));
  for (auto& end : row_ends_) end -= first_cell;
  std::fill(open_cell_.begin(), open_cell_.end(), kNoCell);  // positions moved
}

void MetricTable::group_by_metric(std::vector<std::size_t>& first, std::vector<std::size_t>& order,
                                  std::vector<std::size_t>& row_of) const {
  first.assign(names_.size() + 1, 0);
  for (const auto& cell : cells_) ++first[cell.metric + 1];
  for (std::size_t m = 1; m < first.size(); ++m) first[m] += first[m - 1];
  auto next = first;
  order.resize(cells_.size());
  row_of.resize(cells_.size());
  std::size_t row = 0;
  for (std::size_t at = 0; at < cells_.size(); ++at) {
    while (row_ends_[row] <= at) ++row;
    const auto slot = next[cells_[at].metric]++;
    order[slot] = at;
    row_of[slot] = row;
  }
}

MetricTable::Series MetricTable::series(std::string_view name) const {
  Series out;
  const auto metric = index_of(name);
  if (!metric) return out;
  for (std::size_t row = 0; row < rows(); ++row) {
    for (const auto& cell : cells(row)) {
      if (cell.metric != *metric || std::isnan(cell.value)) continue;
      out.steps.push_back(steps_[row]);
      out.wall_times.push_back(wall_times_[row]);
      out.values.push_back(cell.value);
    }
  }
  return out;
}

std::map<std::string, MetricTable::Series> MetricTable::all_series() const {
  std::vector<std::size_t> first, order, row_of;
  group_by_metric(first, order, row_of);
  std::map<std::string, Series> out;
  for (std::uint32_t metric = 0; metric < names_.size(); ++metric) {
    auto& series = out[names_[metric]];
    for (auto slot = first[metric]; slot < first[metric + 1]; ++slot) {
      const double value = cells_[order[slot]].value;
      if (std::isnan(value)) continue;
      series.steps.push_back(steps_[row_of[slot]]);
      series.wall_times.push_back(wall_times_[row_of[slot]]);
      series.values.push_back(value);
    }
  }
  return out;
}

void MetricTable::for_each_dense_column(
    const std::function<void(const std::string& name, const std::vector<double>& column)>& visit) const {
  std::vector<std::size_t> first, order, row_of;
  group_by_metric(first, order, row_of);
  std::vector<double> column;
  for (const auto& [name, metric] : index_) {
    column.assign(rows(), std::numeric_limits<double>::quiet_NaN());
    for (auto slot = first[metric]; slot < first[metric + 1]; ++slot) column[row_of[slot]] = cells_[order[slot]].value;
    visit(name, column);
  }
}

std::vector<double> MetricTable::dense(std::string_view name) const {
  std::vector<double> column(rows(), std::numeric_limits<double>::quiet_NaN());
  const auto metric = index_of(name);
  if (!metric) return column;
  for (std::size_t row = 0; row < rows(); ++row)
    for (const auto& cell : cells(row))
      if (cell.metric == *metric) column[row] = cell.value;
  return column;
}

std::optional<double> MetricTable::last(std::string_view name) const {
  const auto metric = index_of(name);
  if (!metric) return std::nullopt;
  for (auto at = cells_.size(); at-- > 0;)
    if (cells_[at].metric == *metric && !std::isnan(cells_[at].value)) return cells_[at].value;
  return std::nullopt;
}

std::optional<double> MetricTable::best(std::string_view name, bool smaller_is_better) const {
  const auto metric = index_of(name);
  if (!metric) return std::nullopt;
  std::optional<double> best;
  for (const auto& cell : cells_) {
    if (cell.metric != *metric || std::isnan(cell.value)) continue;
    if (!best || (smaller_is_better ? cell.value < *best : cell.value > *best)) best = cell.value;
  }
  return best;
}

bool MetricTable::operator==(const MetricTable& other) const {
  if (steps_ != other.steps_ || wall_times_.size() != other.wall_times_.size()) return false;
  for (std::size_t row = 0; row < rows(); ++row)
    if (!same_double(wall_times_[row], other.wall_times_[row])) return false;
  // The wall times were compared row by row above (NaN equal to NaN); per name, steps and values.
  auto reported = [](const MetricTable& table) {
    std::map<std::string, std::pair<std::vector<std::int64_t>, std::vector<double>>> out;
    for (auto& [name, series] : table.all_series())
      if (!series.values.empty()) out.emplace(name, std::pair(std::move(series.steps), std::move(series.values)));
    return out;
  };
  return reported(*this) == reported(other);
}

}  // namespace dlx::record
