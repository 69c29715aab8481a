// SPDX-License-Identifier: Apache-2.0
// --watch's progress line (tools/dlx/watch_progress.hpp): trials ended, `step N of M`, and an ETA
// only when every running trial with a target has moved since the previous frame.
#include <catch2/catch.hpp>

#include <chrono>

#include "watch_progress.hpp"

using namespace dlx::cli;
using namespace std::chrono_literals;

namespace {

TrialRow row(int id, const std::string& state, std::optional<std::int64_t> step, std::int64_t target) {
  TrialRow out;
  out.spec.id = id;
  out.state = state;
  out.last_step = step;
  out.target_length = target;
  return out;
}

}  // namespace

TEST_CASE("watch progress: ended count, step of target, and an ETA from the rate since the last frame",
          "[watch]") {
  ProgressTracker tracker;
  const auto t0 = ProgressTracker::Clock::time_point{} + 100s;
  StatusReport report;
  report.rows = {row(0, "completed", 100, 0), row(1, "running", 10, 110), row(2, "pending", std::nullopt, 0)};
  // First frame: no rate yet, so no ETA.
  auto first = tracker.update(report, t0);
  CHECK(first.line() == "1 of 3 trials ended; running: trial 1 step 10 of 110");
  CHECK_FALSE(first.eta_seconds);
  // 10 steps in 2 s: the 90 steps left take 18 s.
  report.rows[1].last_step = 20;
  auto second = tracker.update(report, t0 + 2s);
  REQUIRE(second.eta_seconds);
  CHECK(*second.eta_seconds == Approx(18));
  CHECK(second.line() == "1 of 3 trials ended; running: trial 1 step 20 of 110; eta 18s");
  CHECK(second.json()["eta_seconds"] == Approx(18));
}

TEST_CASE("watch progress: no ETA while a running trial with a target has not moved", "[watch]") {
  ProgressTracker tracker;
  const auto t0 = ProgressTracker::Clock::time_point{} + 100s;
  StatusReport report;
  report.rows = {row(0, "running", 10, 100), row(1, "running", 5, 100)};
  tracker.update(report, t0);
  report.rows[0].last_step = 50;  // trial 1 stays at 5
  const auto progress = tracker.update(report, t0 + 1s);
  CHECK_FALSE(progress.eta_seconds);
  CHECK(progress.line() == "0 of 2 trials ended; running: trial 0 step 50 of 100, trial 1 step 5 of 100");
  // Once it moves, its rate is over both frames since it last moved: 5 steps in 2 s.
  report.rows[1].last_step = 10;
  report.rows[0].last_step = 60;
  const auto later = tracker.update(report, t0 + 2s);
  REQUIRE(later.eta_seconds);
  CHECK(*later.eta_seconds == Approx(90 / 2.5));  // trial 1 is the slower: 90 left at 2.5 steps/s
}

TEST_CASE("watch progress: durations", "[watch]") {
  CHECK(format_duration(0.2) == "1s");
  CHECK(format_duration(45) == "45s");
  CHECK(format_duration(185) == "3m05s");
  CHECK(format_duration(7440) == "2h04m");
}
