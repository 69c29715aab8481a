// SPDX-License-Identifier: Apache-2.0
#include "status_watch.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "commands.hpp"
#include "dlx/config/display_text.hpp"
#include "status_report.hpp"
#include "status_slurm.hpp"
#include "stop_signals.hpp"
#include "terminal.hpp"
#include "watch_progress.hpp"

namespace dlx::cli {

namespace {

constexpr double kMinInterval = 0.5, kMaxInterval = 3600;

std::string local_time_now() {
  const std::time_t now = std::time(nullptr);
  struct tm local {};
  ::localtime_r(&now, &local);
  char text[64];
  return std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S %Z", &local) ? text : "";
}

// One write for the whole frame: a terminal never shows half of one.
void write_frame(const std::string& frame) {
  std::fwrite(frame.data(), 1, frame.size(), stdout);
  std::fflush(stdout);
}

// Cursor home, each line cleared to its end, then the rest of the screen cleared: the frame
// overwrites the previous one in place (no blank screen between them, so no flicker). A frame
// taller than the terminal would scroll, and the next one would be drawn below a stale top: its
// last lines give way to one that says how many are hidden.
std::string redraw(const std::string& frame, std::optional<std::size_t> rows) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  for (std::size_t end = frame.find('\n'); end != std::string::npos; start = end + 1, end = frame.find('\n', start)) {
    lines.emplace_back(frame.data() + start, end - start);
  }
  std::string hidden;
  if (rows && *rows >= 3 && lines.size() > *rows - 1) {
    const std::size_t kept = *rows - 2;
    hidden = fmt::format("# ... {} more lines (a taller terminal shows them; or --watch > FILE)",
                         lines.size() - kept);
    lines.resize(kept);
  }
  std::string out = "\x1b[H";
  for (const auto line : lines) {
    out += line;
    out += "\x1b[K\n";
  }
  if (!hidden.empty()) out += hidden + "\x1b[K\n";
  return out + "\x1b[J";
}

}  // namespace

double parse_watch_interval(const std::string& text) {
  double seconds = 0;
  const auto [rest, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (text.empty() || error != std::errc() || rest != text.data() + text.size() || !std::isfinite(seconds)) {
    throw UsageError(fmt::format("--watch: '{}' is not a number of seconds (give SECONDS from {} to {}, e.g. "
                                 "--watch 5)", config::abbreviated(text), kMinInterval, kMaxInterval));
  }
  if (seconds < kMinInterval || seconds > kMaxInterval) {
    throw UsageError(fmt::format("--watch: {} seconds is out of range (give SECONDS from {} to {})",
                                 config::abbreviated(text), kMinInterval, kMaxInterval));
  }
  return seconds;
}

int watch_status(const std::filesystem::path& directory, const config::Experiment& experiment,
                 const WatchOptions& options) {
  const StopSignals signals;
  const bool terminal = stdout_is_terminal();
  ProgressTracker tracker;
  std::set<std::string> warned;  // a damaged journal is said once, not every frame
  bool first = true;
  while (!StopSignals::requested()) {
    const auto slurm = options.job ? std::optional(ask_slurm(*options.job)) : std::nullopt;
    const auto report = read_status(directory, experiment, nullptr, slurm ? &*slurm : nullptr);
    for (const auto& warning : report.warnings) {
      if (warned.insert(warning).second) std::fputs(warning.c_str(), stderr);
    }
    const auto progress = tracker.update(report, ProgressTracker::Clock::now());
    const auto time = local_time_now();
    std::string frame;
    if (options.json) {
      auto document = status_json(report, experiment);
      document["time"] = time;
      document["progress"] = progress.json();
      frame = document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    } else {
      SparklineChoice sparklines{options.sparklines, terminal ? terminal_columns() : std::nullopt};
      if (terminal && !sparklines.columns) sparklines.columns = 80;
      const auto header = fmt::format("# {}  {}\n", time, progress.line());
      frame = render_status_table(report, experiment, sparklines, header);
      // To a file: the frames one after another, each after a line with its time (`> log`).
      frame = terminal ? redraw(frame, terminal_rows()) : fmt::format("{}# ---- {}\n{}", first ? "" : "\n", time, frame);
    }
    write_frame(frame);
    first = false;
    if (report.finished) break;  // nothing will change any more
    sleep_unless_stopped(std::chrono::duration<double>(options.interval_seconds));
  }
  return 0;
}

}  // namespace dlx::cli
