// SPDX-License-Identifier: Apache-2.0
#include "notice_cause.hpp"

#include <signal.h>
#include <string.h>

#include <charconv>
#include <cstdlib>
#include <ctime>
#include <vector>

#include <fmt/format.h>

#include "dlx/common/bounded_command.hpp"

namespace dlx::detail {
namespace {

std::string signal_text(int signal_number) {
  if (signal_number <= 0) return "no signal";
  const char* name = ::sigabbrev_np(signal_number);
  return name ? fmt::format("SIG{}", name) : fmt::format("signal {}", signal_number);
}

std::optional<std::int64_t> whole_number(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

}  // namespace

NoticeCause classify_notice(int signal_number, const TimeLeft& left) {
  const auto signal = signal_text(signal_number);
  switch (left.kind) {
    case TimeLeft::Kind::seconds:
      if (left.seconds <= kTimeLimitWindow.count())
        return {"time_limit", fmt::format("{} with {} s left before the job's time limit", signal, left.seconds)};
      if (signal_number == SIGTERM)
        return {"requeue", fmt::format("{} with {} s left before the time limit (scontrol requeue, scancel, or a "
                                       "preemption without preempt_send_user_signal)", signal, left.seconds)};
      return {"preemption", fmt::format("{} with {} s left before the time limit", signal, left.seconds)};
    case TimeLeft::Kind::unlimited:
      if (signal_number == SIGTERM)
        return {"requeue", fmt::format("{}, no time limit (scontrol requeue, scancel, or a preemption without "
                                       "preempt_send_user_signal)", signal)};
      return {"preemption", fmt::format("{}, no time limit", signal)};
    case TimeLeft::Kind::unknown: break;
  }
  return {"notice", fmt::format("{}; the job's time left is unknown (preemption, time limit or requeue)", signal)};
}

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

TimeLeft job_time_left() {
  if (const char* end = std::getenv("SLURM_JOB_END_TIME")) {
    if (const auto at = whole_number(end)) return {TimeLeft::Kind::seconds, std::max<std::int64_t>(0, *at - std::time(nullptr))};
  }
  const char* job = std::getenv("SLURM_JOB_ID");
  if (job == nullptr || !whole_number(job)) return {};
  try {
    // Asked once, after the checkpoint is saved, well inside Slurm's KillWait (30 s by default);
    // a slurmctld busy with a whole array's requeues has been seen to take over 2 s to answer.
    const auto result = run_bounded({"squeue", "-h", "-o", "%L", "-j", job},
                                    CommandLimits{std::chrono::milliseconds(5000), 4096});
    if (result.exit_code != 0) return {};
    return parse_time_left(result.out);
  } catch (const Error&) {
    return {};  // no squeue, or no answer in time: the cause stays "notice"
  }
}

}  // namespace dlx::detail
