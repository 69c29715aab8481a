// SPDX-License-Identifier: Apache-2.0
#pragma once
// --watch's progress from one frame to the next: trials ended out of all, how far each running
// trial is to the length the searcher sends it to (`step N of M`), and when the running trials
// should reach it. The estimate covers the running trials that have a target, from their steps
// since the previous frame only: while one of them has not moved (or was not seen before) there is
// none (no estimate rather than a made-up one).
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "status_report.hpp"

namespace dlx::cli {

struct RunningTrial {
  int id = 0;
  std::optional<std::int64_t> step;  // its last reported step; nullopt: none yet
  std::int64_t target = 0;           // 0: the searcher set none
};

struct WatchProgress {
  std::size_t ended = 0, total = 0;
  std::vector<RunningTrial> running;
  std::optional<double> eta_seconds;  // until every running trial reaches its target
  bool finished = false;                 // StatusReport::finished: the last frame
  std::map<std::string, int> left;       // when finished, the trials that did not end, by state

  // "2 of 4 trials ended; running: trial 3 step 120 of 256; eta 2m10s"; at the end of a search
  // that leaves trials paused: "3 of 9 trials ended; the searcher has finished, leaving 6 paused"
  std::string line() const;
  nlohmann::ordered_json json() const;
};

class ProgressTracker {
 public:
  using Clock = std::chrono::steady_clock;
  WatchProgress update(const StatusReport& report, Clock::time_point now);

 private:
  struct Sample {
    std::int64_t step;
    Clock::time_point at;
  };
  std::map<int, Sample> previous_;  // running trials' steps at the previous frame
};

// "45s", "3m05s", "2h04m".
std::string format_duration(double seconds);

}  // namespace dlx::cli
