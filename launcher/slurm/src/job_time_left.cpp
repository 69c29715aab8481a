// SPDX-License-Identifier: Apache-2.0
#include "dlx/slurm/job_time_left.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <vector>

#include "dlx/common/bounded_command.hpp"
#include "dlx/common/error.hpp"

namespace dlx::slurm {
namespace {

std::optional<std::int64_t> whole_number(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

}  // namespace

TimeLeft parse_time_left(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  if (text == "UNLIMITED" || text == "INFINITE") return {TimeLeft::Kind::unlimited, 0};
  std::int64_t days = 0;
  if (const auto dash = text.find('-'); dash != std::string_view::npos) {
    const auto parsed = whole_number(text.substr(0, dash));
    if (!parsed) return {};
    days = *parsed;
    text.remove_prefix(dash + 1);
  }
  std::vector<std::int64_t> parts;
  for (std::size_t at = 0; at <= text.size();) {
    const auto colon = std::min(text.find(':', at), text.size());
    const auto part = whole_number(text.substr(at, colon - at));
    if (!part) return {};
    parts.push_back(*part);
    at = colon + 1;
  }
  if (parts.size() < 2 || parts.size() > 3) return {};
  std::int64_t seconds = 0;
  for (auto part : parts) seconds = seconds * 60 + part;
  return {TimeLeft::Kind::seconds, days * 86400 + seconds};
}

TimeLeft ask_time_left(const std::string& job, std::chrono::milliseconds bound) {
  const auto underscore = job.find('_');
  if (!whole_number(std::string_view(job).substr(0, underscore)) ||
      (underscore != std::string::npos && !whole_number(std::string_view(job).substr(underscore + 1)))) {
    return {};
  }
  try {
    const auto result = run_bounded({"squeue", "-h", "-o", "%L", "-j", job}, CommandLimits{bound, 4096});
    if (result.exit_code != 0) return {};
    return parse_time_left(result.out);
  } catch (const Error&) {
    return {};  // no squeue, or no answer in time
  }
}

std::string end_time_value(const TimeLeft& left, std::time_t now) {
  switch (left.kind) {
    case TimeLeft::Kind::seconds: return std::to_string(static_cast<std::int64_t>(now) + left.seconds);
    case TimeLeft::Kind::unlimited: return "UNLIMITED";
    case TimeLeft::Kind::unknown: break;
  }
  return "";
}

TimeLeft time_left_from_end(std::string_view value, std::time_t now) {
  if (value == "UNLIMITED") return {TimeLeft::Kind::unlimited, 0};
  const auto end = whole_number(value);
  if (!end) return {};
  return {TimeLeft::Kind::seconds, std::max<std::int64_t>(0, *end - static_cast<std::int64_t>(now))};
}

}  // namespace dlx::slurm
