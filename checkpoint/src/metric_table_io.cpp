#include "metric_table_io.hpp"

#include <fmt/format.h>

#include "dlx/checkpoint/h5/datasets.hpp"
#include "dlx/checkpoint/h5/error.hpp"
#include "dlx/checkpoint/h5/objects.hpp"
#include "dlx/checkpoint/h5/read_guard.hpp"
#include "layout.hpp"

namespace dlx::checkpoint {
namespace {

// Problems of the record itself, not of the file: the caller names the file.
void validate(const std::string& group_name, const MetricTable& table) {
  for (const auto& [name, column] : table.columns) {
    if (name.empty() || name == "." || name == layout::kStepsDataset ||
        name.find('/') != std::string::npos)
      throw CheckpointError(
          fmt::format("{} metric name '{}' cannot be stored (empty, '.', '{}' or containing "
                      "'/'); rename the metric",
                      group_name, name, layout::kStepsDataset));
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
  for (const auto& [name, column] : table.columns)
    h5::write_vector(group.get(), name, column, file);
}

MetricTable read_metric_table(hid_t parent, const std::string& parent_path,
                              const std::string& group_name, h5::ReadGuard& guard) {
  const auto group_path = h5::child_path(parent_path, group_name);
  auto group = h5::open_group_member(parent, parent_path, group_name, guard);
  MetricTable table;
  {
    auto steps = h5::open_dataset_member(group.get(), group_path, layout::kStepsDataset, guard);
    table.steps = h5::read_int64_dataset(
        steps.get(), "dataset " + h5::child_path(group_path, layout::kStepsDataset), guard);
  }
  for (const auto& name : h5::member_names(group.get(), group_path, guard)) {
    if (name == layout::kStepsDataset) continue;
    const auto what = "dataset " + h5::child_path(group_path, name);
    auto dataset = h5::open_dataset_member(group.get(), group_path, name, guard);
    auto column = h5::read_double_dataset(dataset.get(), what, guard);
    if (column.size() != table.steps.size())
      h5::throw_format_error(guard.file(), fmt::format("{} has {} values for {} steps", what,
                                                       column.size(), table.steps.size()));
    table.columns.emplace(name, std::move(column));
  }
  return table;
}

}  // namespace dlx::checkpoint
