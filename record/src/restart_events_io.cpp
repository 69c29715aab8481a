// SPDX-License-Identifier: Apache-2.0
#include "restart_events_io.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "dlx/h5/attributes.hpp"
#include "dlx/h5/error.hpp"
#include "dlx/h5/objects.hpp"
#include "dlx/h5/read_guard.hpp"
#include "layout.hpp"

namespace dlx::record {
namespace {

constexpr const char* kCause = "cause";
constexpr const char* kReason = "reason";
constexpr const char* kPreviousNodes = "previous_nodes";  // format 3
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
  // A writer extending its own file (trial_record_writer.hpp) finds the groups it wrote before:
  // their attributes are written again (the last event is completed at the resume).
  auto open_or_create = [&](hid_t parent, const std::string& name) {
    if (!h5::has_link(parent, name, file)) return h5::create_group(parent, name, file);
    auto group = h5::open_group(parent, name, file);
    h5::delete_attributes(group.get(), file);
    return group;
  };
  auto group = open_or_create(root, layout::kRestartEventsGroup);
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& event = events[i];
    auto item = open_or_create(group.get(), std::to_string(i + 1));
    h5::write_attribute(item.get(), kCause, event.cause, file);
    h5::write_attribute(item.get(), kReason, event.reason, file);
    h5::write_attribute(item.get(), kPreviousNodes, event.previous_nodes, file);
    h5::write_attribute(item.get(), kUnixTime, event.unix_time, file);
    h5::write_attribute(item.get(), kResumedStep, event.resumed_step, file);
    h5::write_attribute(item.get(), kStepsLost, event.steps_lost, file);
    h5::write_attribute(item.get(), kSecondsLost, event.seconds_lost, file);
    h5::write_attribute(item.get(), kDowntime, event.downtime_seconds, file);
  }
}

std::vector<RestartEvent> read_restart_events(hid_t root, h5::ReadGuard& guard) {
  const auto& file = guard.file();
  std::vector<RestartEvent> events;
  if (!h5::has_link(root, layout::kRestartEventsGroup, file)) return events;
  const auto group_path = h5::child_path("/", layout::kRestartEventsGroup);
  auto group = h5::open_group_member(root, "/", layout::kRestartEventsGroup, guard);
  std::vector<std::pair<int, std::string>> names;
  for (const auto& name : h5::member_names(group.get(), group_path, guard)) {
    auto number = event_number(name);
    if (!number) {
      h5::throw_format_error(file, fmt::format("/{}/{} is not a restart number (1, 2, ...)",
                                               layout::kRestartEventsGroup, name));
    }
    names.emplace_back(*number, name);
  }
  std::sort(names.begin(), names.end());
  auto text = [&](hid_t item, const char* attribute) {
    auto value = h5::read_string_attribute(item, attribute, file);
    guard.take(value.size(), fmt::format("attribute '{}' of a restart event", attribute));
    return value;
  };
  for (const auto& [number, name] : names) {
    auto item = h5::open_group_member(group.get(), group_path, name, guard);
    auto id = item.get();
    RestartEvent event;
    event.cause = text(id, kCause);
    event.reason = text(id, kReason);
    if (h5::has_attribute(id, kPreviousNodes, file)) event.previous_nodes = text(id, kPreviousNodes);
    event.unix_time = h5::read_int64_attribute(id, kUnixTime, file);
    event.resumed_step = h5::read_int64_attribute(id, kResumedStep, file);
    event.steps_lost = h5::read_int64_attribute(id, kStepsLost, file);
    event.seconds_lost = h5::read_double_attribute(id, kSecondsLost, file);
    event.downtime_seconds = h5::read_double_attribute(id, kDowntime, file);
    events.push_back(std::move(event));
  }
  return events;
}

}  // namespace dlx::record
