// Scalars: one Event per metric table row, as TensorBoard's scalar dashboard reads them.
#include <cmath>

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

std::size_t append_scalar_records(std::string& stream, const checkpoint::MetricTable& table,
                                  const std::string& group, double fallback_wall_time) {
  std::vector<std::string> tags;
  tags.reserve(table.columns.size());
  for (const auto& [metric, column] : table.columns) tags.push_back(group + "/" + metric);
  Event event;
  std::string serialized;
  std::size_t appended = 0;
  auto* summary = event.mutable_summary();
  for (std::size_t row = 0; row < table.steps.size(); ++row) {
    // Every field is set anew; clear_value() keeps the values and their tag strings for reuse
    // (Event::Clear() would free the summary, which sits in a oneof).
    summary->clear_value();
    const double wall_time = row < table.wall_times.size() ? table.wall_times[row] : NAN;
    event.set_wall_time(std::isnan(wall_time) ? fallback_wall_time : wall_time);
    event.set_step(table.steps[row]);
    std::size_t index = 0;
    for (const auto& [metric, column] : table.columns) {
      const auto& tag = tags[index++];
      if (row >= column.size() || std::isnan(column[row])) continue;
      auto* value = summary->add_value();
      value->set_tag(tag);
      // TensorBoard's scalars are float32: the rounding is the format's, not a choice here.
      value->set_simple_value(static_cast<float>(column[row]));
    }
    if (summary->value_size() == 0) continue;
    event.SerializeToString(&serialized);
    append_tfrecord(stream, serialized);
    ++appended;
  }
  return appended;
}

}  // namespace dlx::tensorboard
