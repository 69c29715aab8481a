// Scalars: one Event per metric table row, as TensorBoard's scalar dashboard reads them.
#include <cmath>

#include "dlx/export/tensorboard_events.hpp"
#include "dlx/tensorboard/event.pb.h"

namespace dlx::tensorboard {

std::string file_version_event(double wall_time) {
  Event event;
  event.set_wall_time(wall_time);
  event.set_file_version("brain.Event:2");
  return event.SerializeAsString();
}

std::vector<std::string> scalar_events(const checkpoint::MetricTable& table, const std::string& group,
                                       double fallback_wall_time) {
  std::vector<std::string> events;
  for (std::size_t row = 0; row < table.steps.size(); ++row) {
    Event event;
    const double wall_time = row < table.wall_times.size() ? table.wall_times[row] : NAN;
    event.set_wall_time(std::isnan(wall_time) ? fallback_wall_time : wall_time);
    event.set_step(table.steps[row]);
    auto* summary = event.mutable_summary();
    for (const auto& [metric, column] : table.columns) {
      if (row >= column.size() || std::isnan(column[row])) continue;
      auto* value = summary->add_value();
      value->set_tag(group + "/" + metric);
      // TensorBoard's scalars are float32: the rounding is the format's, not a choice here.
      value->set_simple_value(static_cast<float>(column[row]));
    }
    if (summary->value_size() > 0) events.push_back(event.SerializeAsString());
  }
  return events;
}

}  // namespace dlx::tensorboard
