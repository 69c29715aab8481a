#include "metric_table_io.hpp"

#include <limits>

#include <fmt/format.h>

#include "dlx/h5/datasets.hpp"
#include "dlx/h5/error.hpp"
#include "dlx/h5/objects.hpp"
#include "dlx/h5/read_guard.hpp"
#include "dlx/checkpoint/metrics_log.hpp"
#include "layout.hpp"

namespace dlx::checkpoint {
namespace {

// Problems of the record itself, not of the file: the caller names the file.
void validate(const std::string& group_name, const MetricTable& table) {
  if (table.wall_times.size() != table.steps.size())
    throw CheckpointError(fmt::format("{} has {} wall times for {} steps", group_name,
                                      table.wall_times.size(), table.steps.size()));
  for (const auto& [name, column] : table.columns) {
    if (auto problem = metric_name_problem(name))
      throw CheckpointError(fmt::format("{}: {}", group_name, *problem));
    if (column.size() != table.steps.size())
      throw CheckpointError(fmt::format("{} metric '{}' has {} values for {} steps", group_name,
                                        name, column.size(), table.steps.size()));
  }
}

}  // namespace

void write_metric_table(hid_t parent, const std::string& group_name, const MetricTable& table,
                        const std::filesystem::path& file) {
  validate(group_name, table);
  auto group = h5::create_group(parent, group_name, file);
  h5::write_vector(group.get(), layout::kStepsDataset, table.steps, file);
  h5::write_vector(group.get(), layout::kWallTimeDataset, table.wall_times, file);
  for (const auto& [name, column] : table.columns)
    h5::write_vector(group.get(), name, column, file);
}

MetricTable read_metric_table(hid_t parent, const std::string& parent_path,
                              const std::string& group_name, h5::ReadGuard& guard,
                              std::int64_t format_version) {
  const auto group_path = h5::child_path(parent_path, group_name);
  auto group = h5::open_group_member(parent, parent_path, group_name, guard);
  MetricTable table;
  {
    auto steps = h5::open_dataset_member(group.get(), group_path, layout::kStepsDataset, guard);
    table.steps = h5::read_int64_dataset(
        steps.get(), "dataset " + h5::child_path(group_path, layout::kStepsDataset), guard);
  }
  bool has_wall_times = false;
  for (const auto& name : h5::member_names(group.get(), group_path, guard)) {
    if (name == layout::kStepsDataset) continue;
    if (name == layout::kWallTimeDataset && format_version >= 2) {
      auto dataset = h5::open_dataset_member(group.get(), group_path, name, guard);
      const auto what = "dataset " + h5::child_path(group_path, name);
      table.wall_times = h5::read_double_dataset(dataset.get(), what, guard);
      if (table.wall_times.size() != table.steps.size())
        h5::throw_format_error(guard.file(), fmt::format("{} has {} values for {} steps", what,
                                                         table.wall_times.size(), table.steps.size()));
      has_wall_times = true;
      continue;
    }
    const auto what = "dataset " + h5::child_path(group_path, name);
    auto dataset = h5::open_dataset_member(group.get(), group_path, name, guard);
    auto column = h5::read_double_dataset(dataset.get(), what, guard);
    if (column.size() != table.steps.size())
      h5::throw_format_error(guard.file(), fmt::format("{} has {} values for {} steps", what,
                                                       column.size(), table.steps.size()));
    table.columns.emplace(name, std::move(column));
  }
  if (!has_wall_times)  // format 1: no times were recorded
    table.wall_times.assign(table.steps.size(), std::numeric_limits<double>::quiet_NaN());
  return table;
}

}  // namespace dlx::checkpoint
