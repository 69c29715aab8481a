// SPDX-License-Identifier: Apache-2.0
#pragma once
// One metric table of trial.h5 (training or validation) in memory: rows of (step, wall time, the
// metrics reported in that row), kept row by row as reports and the metrics log's records are.
//
// Why rows of cells and not one NaN-padded column per metric (trial.h5's layout): a table is read
// from files another user may have written (the metrics log is 26 bytes per empty row), so what a
// reader holds must grow with what the file holds, never with rows x names. Here each row costs
// O(1) and each reported value O(1) (issue 31: a 1 MB log of 4,096 names and empty rows took
// 1.6 GB as padded columns), and dropping rows (a resume, a replayed step) finds its cut by binary
// search on the steps, which a table keeps strictly increasing. Columns are made on demand, in
// one pass over the cells (series, for_each_dense_column).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dlx::record {

// The index of the first of `steps` (strictly increasing) at or after `step`: a binary search, so
// that a drop costs O(log rows) whatever the table holds (issue 31: a scan from the first row per
// replayed row made a log of repeated steps quadratic). A template so that a test can count the
// steps it looks at.
template <typename Steps>
std::size_t first_step_at_or_after(const Steps& steps, std::int64_t step) {
  std::size_t low = 0, high = steps.size();
  while (low < high) {
    const std::size_t middle = low + (high - low) / 2;
    if (steps[middle] < step) low = middle + 1;
    else high = middle;
  }
  return low;
}

// Distinct metric names one table may hold; a report past it is refused with a clear error.
inline constexpr std::size_t kMaxMetricNames = 4096;

// One reported value: `metric` indexes MetricTable::names().
struct MetricCell {
  std::uint32_t metric = 0;
  double value = 0;
};

class MetricTable {
 public:
  // A metric's reported values in row order, with each row's step and wall time.
  struct Series {
    std::vector<std::int64_t> steps;
    std::vector<double> wall_times;
    std::vector<double> values;
    bool operator==(const Series&) const = default;
  };

  std::size_t rows() const noexcept { return steps_.size(); }
  bool empty() const noexcept { return steps_.empty(); }
  // Strictly increasing (open_row drops the rows a smaller or equal step replaces).
  const std::vector<std::int64_t>& steps() const noexcept { return steps_; }
  // Unix seconds when each row was reported; NaN for rows of format 1 files.
  const std::vector<double>& wall_times() const noexcept { return wall_times_; }
  // The values reported in row `row`, each metric at most once, in the order they were set.
  std::span<const MetricCell> cells(std::size_t row) const;
  std::size_t cell_count() const noexcept { return cells_.size(); }

  // Every metric name the table has had, by index (a name stays when its rows are dropped: its
  // column is then all NaN in trial.h5, as it was before the drop).
  const std::vector<std::string>& names() const noexcept { return names_; }
  std::optional<std::uint32_t> index_of(std::string_view name) const;
  // The index of `name`, added when new. Throws RecordError past kMaxMetricNames (the name is
  // not checked here: metric_name_problem is the writers' and readers' check).
  std::uint32_t add_name(std::string_view name);

  // Starts a row. A step at or before the last row's first drops the rows from `step` on: the
  // trainer resumed from an earlier checkpoint and reports them again. O(log rows) + the cells
  // dropped.
  void open_row(std::int64_t step, double wall_time = std::numeric_limits<double>::quiet_NaN());
  // Sets a value of the row open_row started last; a metric set twice in a row keeps the last
  // value. O(1). A NaN value reads as "not reported" (as in trial.h5).
  void set(std::uint32_t metric, double value);
  // open_row, then set for each value (adding names as needed).
  void append(std::int64_t step, const std::map<std::string, double>& values,
              double wall_time = std::numeric_limits<double>::quiet_NaN());
  // Drops the rows whose step is >= `step`. O(log rows) + the cells dropped.
  void drop_from(std::int64_t step);
  // Drops every row, keeping the names.
  void clear_rows();
  // Drops the first `count` rows (a writer whose file now holds them). O(rows and cells kept).
  void drop_first_rows(std::size_t count);

  // The non-NaN values of `name` with their rows' steps and wall times (empty when never
  // reported). O(rows + cells).
  Series series(std::string_view name) const;
  // Every name's series, in name order (a name without values has an empty one). O(rows + cells).
  std::map<std::string, Series> all_series() const;
  // Each name in name order with its NaN-padded column of rows() values (trial.h5's layout),
  // built one at a time: O(rows + cells) besides the columns themselves, one column in memory.
  void for_each_dense_column(
      const std::function<void(const std::string& name, const std::vector<double>& column)>& visit) const;
  // The NaN-padded column of `name` (rows() values; all NaN for an unknown name).
  std::vector<double> dense(std::string_view name) const;

  std::optional<double> last(std::string_view metric) const;
  std::optional<double> best(std::string_view metric, bool smaller_is_better) const;

  // Same rows, steps, wall times (NaN equal to NaN) and non-NaN values per name; names without
  // values are ignored (a dense file cannot tell them from no name).
  bool operator==(const MetricTable& other) const;

 private:
  std::size_t row_begin(std::size_t row) const noexcept { return row == 0 ? 0 : row_ends_[row - 1]; }
  // For each metric, the position of its cells in row-major order grouped by metric (a counting
  // sort): positions of metric m are order[first[m] .. first[m + 1]).
  void group_by_metric(std::vector<std::size_t>& first, std::vector<std::size_t>& order,
                       std::vector<std::size_t>& row_of) const;

  std::vector<std::int64_t> steps_;
  std::vector<double> wall_times_;
  std::vector<std::size_t> row_ends_;  // cells of row r: [row_begin(r), row_ends_[r])
  std::vector<MetricCell> cells_;
  std::vector<std::string> names_;
  std::map<std::string, std::uint32_t, std::less<>> index_;
  std::vector<std::size_t> open_cell_;  // by metric: where set() last put it (valid in the open row only)
};

}  // namespace dlx::record
