// SPDX-License-Identifier: Apache-2.0
#include "metric_table_io.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "dlx/h5/datasets.hpp"
#include "dlx/h5/error.hpp"
#include "dlx/h5/objects.hpp"
#include "dlx/h5/read_guard.hpp"
#include "dlx/record/metrics_log.hpp"
#include "layout.hpp"

namespace dlx::record {
namespace {

// A metric's dataset name and back (layout::kSlashInDatasetNames).
std::string replaced(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  for (std::size_t at = 0;;) {
    const auto found = text.find(from, at);
    out.append(text.substr(at, found == std::string_view::npos ? std::string_view::npos : found - at));
    if (found == std::string_view::npos) return out;
    out.append(to);
    at = found + from.size();
  }
}
std::string dataset_name_of(std::string_view metric) { return replaced(metric, "/", layout::kSlashInDatasetNames); }
std::string metric_of_dataset(std::string_view dataset) { return replaced(dataset, layout::kSlashInDatasetNames, "/"); }

// Problems of the record itself, not of the file: the caller names the file.
void validate(const std::string& group_name, const MetricTable& table) {
  for (const auto& name : table.names()) {
    if (auto problem = metric_name_problem(name))
      throw RecordError(fmt::format("{}: {}", group_name, *problem));
  }
}

// Elements per chunk of a table's datasets created at `rows` rows: about an eighth of them,
// between 256 (2 KiB a column: a new trial's file stays small) and 8192 (64 KiB). A dataset keeps
// its chunk size; a restart's full write chooses again for the rows there are by then.
std::uint64_t chunk_rows(std::uint64_t rows) {
  return std::clamp<std::uint64_t>(std::bit_ceil(std::max<std::uint64_t>(rows / 8, 1)), 256, 8192);
}

constexpr double kAbsent = std::numeric_limits<double>::quiet_NaN();
constexpr std::int64_t kNoStep = 0;

h5::Handle create_steps(hid_t group, std::uint64_t rows, std::uint64_t chunk, const std::filesystem::path& file) {
  return h5::create_extendible_vector(group, layout::kStepsDataset, H5T_STD_I64LE, H5T_NATIVE_INT64, &kNoStep,
                                      rows, chunk, file);
}

h5::Handle create_values(hid_t group, const std::string& name, std::uint64_t rows, std::uint64_t chunk,
                         const std::filesystem::path& file) {
  return h5::create_extendible_vector(group, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &kAbsent, rows, chunk, file);
}

// The first of the file's steps at or after `step`: O(log rows) elements read.
std::uint64_t first_row_at_or_after(hid_t steps, std::uint64_t rows, std::int64_t step, const std::string& what,
                                    const std::filesystem::path& file) {
  struct FileSteps {
    hid_t dataset;
    std::uint64_t rows;
    const std::string* what;
    const std::filesystem::path* file;
    std::size_t size() const { return static_cast<std::size_t>(rows); }
    std::int64_t operator[](std::size_t i) const { return h5::read_int64_element(dataset, i, *what, *file); }
  };
  return first_step_at_or_after(FileSteps{steps, rows, &what, &file}, step);
}

}  // namespace

void write_metric_table(hid_t parent, const std::string& group_name, const MetricTable& table,
                        const std::filesystem::path& file) {
  validate(group_name, table);
  auto group = h5::create_group(parent, group_name, file);
  const auto rows = table.rows();
  const auto chunk = chunk_rows(rows);
  const auto what = [&](const std::string& name) { return "dataset " + group_name + "/" + name; };
  auto steps = create_steps(group.get(), rows, chunk, file);
  h5::write_vector_range(steps.get(), H5T_NATIVE_INT64, 0, rows, table.steps().data(), what(layout::kStepsDataset), file);
  auto wall_times = create_values(group.get(), layout::kWallTimeDataset, rows, chunk, file);
  h5::write_vector_range(wall_times.get(), H5T_NATIVE_DOUBLE, 0, rows, table.wall_times().data(),
                         what(layout::kWallTimeDataset), file);
  table.for_each_dense_column([&](const std::string& metric, const std::vector<double>& column) {
    const auto name = dataset_name_of(metric);
    auto dataset = create_values(group.get(), name, rows, chunk, file);
    h5::write_vector_range(dataset.get(), H5T_NATIVE_DOUBLE, 0, rows, column.data(), what(name), file);
  });
}

void append_metric_table(hid_t parent, const std::string& group_name, const MetricTableChanges& changes,
                         const std::filesystem::path& file) {
  validate(group_name, changes.rows);
  auto group = h5::open_group(parent, group_name, file);
  const auto what = [&](const std::string& name) { return "dataset " + group_name + "/" + name; };
  // This writer's own file (the one it wrote last): its datasets are the table's.
  std::vector<std::pair<std::string, h5::Handle>> datasets;
  for (const auto& name : h5::link_names(group.get(), file))
    datasets.emplace_back(name, h5::Handle(h5::check_id(H5Dopen2(group.get(), name.c_str(), H5P_DEFAULT), file,
                                                        "open " + what(name)),
                                           H5Dclose));
  const auto find = [&](const std::string& name) -> hid_t {
    for (const auto& [known, dataset] : datasets)
      if (known == name) return dataset.get();
    return H5I_INVALID_HID;
  };
  const hid_t steps = find(layout::kStepsDataset), wall_times = find(layout::kWallTimeDataset);
  if (steps == H5I_INVALID_HID || wall_times == H5I_INVALID_HID)
    h5::throw_format_error(file, fmt::format("group {} has no steps or wall_time to append to", group_name));
  auto rows = h5::vector_size(steps, what(layout::kStepsDataset), file);
  if (changes.drop_from) {
    const auto keep = first_row_at_or_after(steps, rows, *changes.drop_from, what(layout::kStepsDataset), file);
    if (keep < rows) {
      for (const auto& [name, dataset] : datasets) h5::resize_vector(dataset.get(), keep, what(name), file);
      rows = keep;
    }
  }
  const auto added = changes.rows.rows();
  if (added == 0 && changes.rows.names().empty()) return;
  const auto total = rows + added;
  // Every column grows (a metric these rows lack reads NaN: the fill value), then the new rows'
  // values are written, and new metrics get a column of their own.
  for (const auto& [name, dataset] : datasets) h5::resize_vector(dataset.get(), total, what(name), file);
  h5::write_vector_range(steps, H5T_NATIVE_INT64, rows, added, changes.rows.steps().data(),
                         what(layout::kStepsDataset), file);
  h5::write_vector_range(wall_times, H5T_NATIVE_DOUBLE, rows, added, changes.rows.wall_times().data(),
                         what(layout::kWallTimeDataset), file);
  changes.rows.for_each_dense_column([&](const std::string& metric, const std::vector<double>& column) {
    const auto name = dataset_name_of(metric);
    hid_t dataset = find(name);
    h5::Handle created;
    if (dataset == H5I_INVALID_HID) {
      created = create_values(group.get(), name, total, chunk_rows(total), file);
      dataset = created.get();
    } else if (std::all_of(column.begin(), column.end(), [](double value) { return std::isnan(value); })) {
      return;  // already NaN: the fill value
    }
    h5::write_vector_range(dataset, H5T_NATIVE_DOUBLE, rows, added, column.data(), what(name), file);
  });
}

MetricTable read_metric_table(hid_t parent, const std::string& parent_path,
                              const std::string& group_name, h5::ReadGuard& guard,
                              std::int64_t format_version) {
  const auto group_path = h5::child_path(parent_path, group_name);
  auto group = h5::open_group_member(parent, parent_path, group_name, guard);
  // Format 3 appends to chunked datasets; before, every dataset was contiguous.
  const auto layouts = format_version >= 3 ? h5::Layouts::contiguous_or_chunked : h5::Layouts::contiguous;
  const auto read_int64s = [&](hid_t dataset, const std::string& what) {
    return h5::read_int64_dataset(dataset, what, guard, layouts);
  };
  const auto read_doubles = [&](hid_t dataset, const std::string& what) {
    return h5::read_double_dataset(dataset, what, guard, layouts);
  };
  auto read_column = [&](const std::string& name, const auto& reader) {
    auto dataset = h5::open_dataset_member(group.get(), group_path, name, guard);
    return reader(dataset.get(), "dataset " + h5::child_path(group_path, name));
  };
  const auto steps = read_column(layout::kStepsDataset, read_int64s);
  auto check_length = [&](const std::string& name, std::size_t length) {
    if (length != steps.size())
      h5::throw_format_error(guard.file(), fmt::format("dataset {} has {} values for {} steps",
                                                       h5::child_path(group_path, name), length, steps.size()));
  };
  // Every column is read (each checked against the file before it is: together at most the
  // file's size), then the rows are rebuilt from them, keeping the values reported.
  std::vector<double> wall_times(steps.size(), std::numeric_limits<double>::quiet_NaN());
  std::vector<std::pair<std::string, std::vector<double>>> columns;
  for (const auto& name : h5::member_names(group.get(), group_path, guard)) {
    if (name == layout::kStepsDataset) continue;
    auto column = read_column(name, read_doubles);
    check_length(name, column.size());
    if (name == layout::kWallTimeDataset && format_version >= 2) {  // format 1: a metric like any other
      wall_times = std::move(column);
      continue;
    }
    columns.emplace_back(metric_of_dataset(name), std::move(column));
  }
  if (columns.size() > kMaxMetricNames)
    h5::throw_format_error(guard.file(), fmt::format("group {} holds {} metrics, more than the {} a table may have",
                                                     group_path, columns.size(), kMaxMetricNames));
  MetricTable table;
  std::vector<std::uint32_t> metrics;
  for (const auto& [name, column] : columns) metrics.push_back(table.add_name(name));
  // dlx writes the steps strictly increasing; a file where they are not reads as the log would
  // (a step at or before the last drops the rows from it), in O(rows x columns) all the same.
  for (std::size_t row = 0; row < steps.size(); ++row) {
    table.open_row(steps[row], wall_times[row]);
    for (std::size_t c = 0; c < columns.size(); ++c)
      if (const double value = columns[c].second[row]; !std::isnan(value)) table.set(metrics[c], value);
  }
  return table;
}

}  // namespace dlx::record
