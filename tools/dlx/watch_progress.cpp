// SPDX-License-Identifier: Apache-2.0
#include "watch_progress.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dlx::cli {

namespace {

constexpr std::size_t kListedRunning = 8;  // more would make the line wrap on any terminal

}  // namespace

WatchProgress ProgressTracker::update(const StatusReport& report, Clock::time_point now) {
  WatchProgress progress;
  progress.total = report.rows.size();
  std::map<int, Sample> current;
  double eta = 0;
  bool eta_known = false, eta_unknown = false;
  for (const auto& row : report.rows) {
    if (row.ended()) ++progress.ended;
    if (row.state != "running") continue;
    progress.running.push_back({row.spec.id, row.last_step, row.target_length});
    if (!row.last_step || row.target_length <= 0) continue;
    current[row.spec.id] = {*row.last_step, now};
    const auto before = previous_.find(row.spec.id);
    const double elapsed = before == previous_.end() ? 0 : std::chrono::duration<double>(now - before->second.at).count();
    if (before == previous_.end() || *row.last_step <= before->second.step || elapsed <= 0) {
      eta_unknown = true;  // no rate yet: not moving, or first seen in this frame
      continue;
    }
    const double rate = static_cast<double>(*row.last_step - before->second.step) / elapsed;
    eta = std::max(eta, static_cast<double>(std::max<std::int64_t>(0, row.target_length - *row.last_step)) / rate);
    eta_known = true;
  }
  if (eta_known && !eta_unknown) progress.eta_seconds = eta;
  progress.finished = report.finished;
  if (progress.finished) {
    for (const auto& row : report.rows) {
      if (!row.ended()) ++progress.left[row.state];
    }
  }
  // A trial keeps its sample until it moves: a rate over two frames of a slow trial is still a
  // rate, where "no step since the last frame" would hide it forever at short intervals.
  for (auto& [id, sample] : current) {
    const auto before = previous_.find(id);
    if (before != previous_.end() && before->second.step == sample.step) sample = before->second;
  }
  previous_ = std::move(current);
  return progress;
}

std::string WatchProgress::line() const {
  std::string text = fmt::format("{} of {} trials ended", ended, total);
  if (!running.empty()) {
    text += "; running:";
    for (std::size_t i = 0; i < running.size() && i < kListedRunning; ++i) {
      const auto& trial = running[i];
      text += fmt::format("{} trial {}", i == 0 ? "" : ",", trial.id);
      if (trial.step) text += fmt::format(" step {}", *trial.step);
      if (trial.step && trial.target > 0) text += fmt::format(" of {}", trial.target);
    }
    if (running.size() > kListedRunning) text += fmt::format(" and {} more", running.size() - kListedRunning);
  }
  if (eta_seconds) text += fmt::format("; eta {}", format_duration(*eta_seconds));
  if (finished && !left.empty()) {
    std::vector<std::string> states;
    for (const auto& [state, count] : left) states.push_back(fmt::format("{} {}", count, state));
    text += fmt::format("; the searcher has finished, leaving {}", fmt::join(states, ", "));
  }
  return text;
}

nlohmann::ordered_json WatchProgress::json() const {
  nlohmann::ordered_json out{{"ended", ended}, {"total", total}, {"running", nlohmann::ordered_json::array()}};
  for (const auto& trial : running) {
    nlohmann::ordered_json item{{"id", trial.id}};
    item["step"] = trial.step ? nlohmann::ordered_json(*trial.step) : nlohmann::ordered_json();
    item["target"] = trial.target > 0 ? nlohmann::ordered_json(trial.target) : nlohmann::ordered_json();
    out["running"].push_back(item);
  }
  out["eta_seconds"] = eta_seconds ? nlohmann::ordered_json(*eta_seconds) : nlohmann::ordered_json();
  out["finished"] = finished;
  return out;
}

std::string format_duration(double seconds) {
  const auto whole = static_cast<long long>(std::ceil(std::max(0.0, seconds)));
  if (whole < 60) return fmt::format("{}s", whole);
  if (whole < 3600) return fmt::format("{}m{:02}s", whole / 60, whole % 60);
  return fmt::format("{}h{:02}m", whole / 3600, whole % 3600 / 60);
}

}  // namespace dlx::cli
