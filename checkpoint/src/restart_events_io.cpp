#include "restart_events_io.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "dlx/checkpoint/h5/attributes.hpp"
#include "dlx/checkpoint/h5/error.hpp"
#include "dlx/checkpoint/h5/objects.hpp"
#include "layout.hpp"

namespace dlx::checkpoint {
namespace {

constexpr const char* kCause = "cause";
constexpr const char* kReason = "reason";
constexpr const char* kUnixTime = "unix_time";
constexpr const char* kResumedStep = "resumed_step";
constexpr const char* kStepsLost = "steps_lost";
constexpr const char* kSecondsLost = "seconds_lost";
constexpr const char* kDowntime = "downtime_seconds";

std::optional<int> event_number(const std::string& name) {
  int number = 0;
  auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), number);
  if (error != std::errc{} || end != name.data() + name.size() || number < 1) return std::nullopt;
  return number;
}

}  // namespace

void write_restart_events(hid_t root, const std::vector<RestartEvent>& events,
                          const std::filesystem::path& file) {
  if (events.empty()) return;
  auto group = h5::create_group(root, layout::kRestartEventsGroup, file);
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& event = events[i];
    auto item = h5::create_group(group.get(), std::to_string(i + 1), file);
    h5::write_attribute(item.get(), kCause, event.cause, file);
    h5::write_attribute(item.get(), kReason, event.reason, file);
    h5::write_attribute(item.get(), kUnixTime, event.unix_time, file);
    h5::write_attribute(item.get(), kResumedStep, event.resumed_step, file);
    h5::write_attribute(item.get(), kStepsLost, event.steps_lost, file);
    h5::write_attribute(item.get(), kSecondsLost, event.seconds_lost, file);
    h5::write_attribute(item.get(), kDowntime, event.downtime_seconds, file);
  }
}

std::vector<RestartEvent> read_restart_events(hid_t root, const std::filesystem::path& file) {
  std::vector<RestartEvent> events;
  if (!h5::has_link(root, layout::kRestartEventsGroup, file)) return events;
  auto group = h5::open_group(root, layout::kRestartEventsGroup, file);
  std::vector<std::pair<int, std::string>> names;
  for (const auto& name : h5::link_names(group.get(), file)) {
    auto number = event_number(name);
    if (!number) {
      h5::throw_format_error(file, fmt::format("/{}/{} is not a restart number (1, 2, ...)",
                                               layout::kRestartEventsGroup, name));
    }
    names.emplace_back(*number, name);
  }
  std::sort(names.begin(), names.end());
  for (const auto& [number, name] : names) {
    auto item = h5::open_group(group.get(), name, file);
    RestartEvent event;
    event.cause = h5::read_string_attribute(item.get(), kCause, file);
    event.reason = h5::read_string_attribute(item.get(), kReason, file);
    event.unix_time = h5::read_int64_attribute(item.get(), kUnixTime, file);
    event.resumed_step = h5::read_int64_attribute(item.get(), kResumedStep, file);
    event.steps_lost = h5::read_int64_attribute(item.get(), kStepsLost, file);
    event.seconds_lost = h5::read_double_attribute(item.get(), kSecondsLost, file);
    event.downtime_seconds = h5::read_double_attribute(item.get(), kDowntime, file);
    events.push_back(std::move(event));
  }
  return events;
}

}  // namespace dlx::checkpoint
