// SPDX-License-Identifier: Apache-2.0
// Scalars: one Event per metric table row, as TensorBoard's scalar dashboard reads them.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "dlx/export/tensorboard_events.hpp"
#include "dlx/export/tfrecord.hpp"
#include "dlx/tensorboard/event.pb.h"

namespace dlx::tensorboard {

std::string file_version_event(double wall_time) {
  Event event;
  event.set_wall_time(wall_time);
  event.set_file_version("brain.Event:2");
  return event.SerializeAsString();
}

std::size_t append_scalar_records(std::string& stream, const record::MetricTable& table,
                                  const std::string& group, double fallback_wall_time,
                                  const std::function<std::int64_t(std::size_t row)>& step_of) {
  // Each row's values in name order (as the tags of one event always were): the metrics' ranks
  // by name, once, then each row's few cells sorted by them. O(rows + cells log).
  const auto& names = table.names();
  std::vector<std::uint32_t> by_name(names.size());
  for (std::uint32_t m = 0; m < by_name.size(); ++m) by_name[m] = m;
  std::sort(by_name.begin(), by_name.end(), [&](auto a, auto b) { return names[a] < names[b]; });
  std::vector<std::uint32_t> rank(names.size());
  std::vector<std::string> tags(names.size());
  for (std::uint32_t r = 0; r < by_name.size(); ++r) rank[by_name[r]] = r;
  for (std::uint32_t m = 0; m < names.size(); ++m) tags[m] = group + "/" + names[m];
  Event event;
  std::string serialized;
  std::size_t appended = 0;
  auto* summary = event.mutable_summary();
  std::vector<record::MetricCell> cells;
  for (std::size_t row = 0; row < table.rows(); ++row) {
    // Every field is set anew; clear_value() keeps the values and their tag strings for reuse
    // (Event::Clear() would free the summary, which sits in a oneof).
    summary->clear_value();
    const double wall_time = table.wall_times()[row];
    event.set_wall_time(std::isnan(wall_time) ? fallback_wall_time : wall_time);
    event.set_step(step_of ? step_of(row) : table.steps()[row]);
    const auto reported = table.cells(row);
    cells.assign(reported.begin(), reported.end());
    std::sort(cells.begin(), cells.end(), [&](const auto& a, const auto& b) { return rank[a.metric] < rank[b.metric]; });
    for (const auto& cell : cells) {
      if (std::isnan(cell.value)) continue;
      auto* value = summary->add_value();
      value->set_tag(tags[cell.metric]);
      // TensorBoard's scalars are float32: the rounding is the format's, not a choice here.
      value->set_simple_value(static_cast<float>(cell.value));
    }
    if (summary->value_size() == 0) continue;
    event.SerializeToString(&serialized);
    append_tfrecord(stream, serialized);
    ++appended;
  }
  return appended;
}

}  // namespace dlx::tensorboard
