// SPDX-License-Identifier: Apache-2.0
#include "metric_line_printer.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "dlx/common/signal_blocked_thread.hpp"

namespace dlx::detail {
namespace {

using Clock = std::chrono::steady_clock;

// How often a wait for the output looks whether the destructor set a deadline meanwhile.
constexpr auto kPollSlice = std::chrono::milliseconds(100);
// stderr's line about lines not printed at the end: it gets this long (it may be the same pipe).
constexpr auto kNoticeWait = std::chrono::seconds(1);

std::size_t lines_in(std::string_view text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// The next write: at most PIPE_BUF bytes, which a pipe that polls writable takes without
// blocking, and ending at a line's end where one line is not longer than that.
std::size_t next_piece(std::string_view text) {
  if (text.size() <= PIPE_BUF) return text.size();
  const auto end = text.rfind('\n', PIPE_BUF - 1);
  return end == std::string_view::npos ? PIPE_BUF : end + 1;
}

enum class Written { all, timed_out, output_gone };

// Writes `text` to `fd` from `written` on, a piece at a time, each once poll says the output
// takes bytes; gives up at deadline() (read again at each slice: the destructor may set it
// meanwhile). `written` says how far it got.
template <typename Deadline>
Written write_text(int fd, std::string_view text, std::size_t& written, const Deadline& deadline) {
  while (written < text.size()) {
    const auto now = Clock::now();
    const auto until = deadline();
    if (now >= until) return Written::timed_out;
    const auto slice = std::min<Clock::duration>(kPollSlice, until - now);
    pollfd output{fd, POLLOUT, 0};
    const int ready = ::poll(&output, 1, static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(slice).count()));
    if (ready < 0 && errno != EINTR) return Written::output_gone;
    if (ready <= 0) continue;
    // POLLERR: a pipe nobody will read again (it polls writable too); POLLNVAL: closed.
    if ((output.revents & (POLLERR | POLLNVAL)) != 0 || (output.revents & POLLOUT) == 0) return Written::output_gone;
    // What a C or C++ program printed through stdio before comes first.
    if (fd == STDOUT_FILENO && written == 0) std::fflush(stdout);
    const auto piece = text.substr(written, next_piece(text.substr(written)));
    const auto n = ::write(fd, piece.data(), piece.size());
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;  // EAGAIN: the program made it O_NONBLOCK
      return Written::output_gone;  // EPIPE among them: the reader went between the poll and the write
    }
    written += static_cast<std::size_t>(n);
  }
  return Written::all;
}

}  // namespace

struct MetricLinePrinter::Shared {
  Shared(int fd, std::chrono::milliseconds drain) : output(fd), final_drain(drain) {}

  void run();
  // A line on stderr, if it takes one within kNoticeWait.
  static void notice(const std::string& text);

  const int output;
  const std::chrono::milliseconds final_drain;
  std::mutex mutex;
  std::condition_variable changed;
  std::string queued;          // under mutex: whole lines, oldest first
  std::size_t left_out = 0;    // under mutex: lines left out since the last line that said so
  bool stopping = false;       // under mutex
  bool done = false;           // under mutex: run() returned
  bool output_gone = false;    // under mutex: print() keeps nothing
  // steady_clock nanoseconds at which the thread stops waiting for the output (the destructor's
  // final drain); the largest value until then.
  std::atomic<std::int64_t> give_up_ns{std::numeric_limits<std::int64_t>::max()};
};

void MetricLinePrinter::Shared::notice(const std::string& text) {
  const auto until = Clock::now() + kNoticeWait;
  std::size_t written = 0;
  write_text(STDERR_FILENO, text, written, [until] { return until; });
}

void MetricLinePrinter::Shared::run() {
  const auto deadline = [this] { return Clock::time_point(Clock::duration(give_up_ns.load())); };
  std::string text;
  for (;;) {
    {
      std::unique_lock lock(mutex);
      changed.wait(lock, [this] { return !queued.empty() || left_out > 0 || stopping; });
      if (queued.empty() && left_out == 0) break;  // stopping, everything written
      text.clear();
      std::swap(text, queued);
      if (const auto count = std::exchange(left_out, 0); count > 0) {
        text += fmt::format("dlx: {} metric line{} left out here: the output was not read as fast as they "
                            "came (the trial's record has every report)\n",
                            count, count == 1 ? "" : "s");
      }
    }
    std::size_t written = 0;
    const auto outcome = write_text(output, text, written, deadline);
    if (outcome == Written::all) continue;
    std::size_t unprinted = lines_in(std::string_view(text).substr(written));
    {
      std::lock_guard lock(mutex);
      unprinted += lines_in(queued) + left_out;
      queued.clear();
      left_out = 0;
      output_gone = true;
    }
    if (outcome == Written::timed_out) {
      notice(fmt::format("dlx: {} metric line{} not printed: the standard output took nothing for {:g} s at "
                         "the end (does anything read it?); the trial's record has every report\n",
                         unprinted, unprinted == 1 ? "" : "s",
                         std::chrono::duration<double>(final_drain).count()));
    } else {
      notice("dlx: the standard output takes no more lines (closed, or nothing reads it): the metric lines "
             "stop here; the trial's record keeps every report\n");
    }
    break;
  }
  std::lock_guard lock(mutex);
  done = true;
  changed.notify_all();
}

MetricLinePrinter::MetricLinePrinter(int output, std::chrono::milliseconds final_drain)
    : shared_(std::make_shared<Shared>(output, final_drain)) {
  // The thread holds the state too: the destructor may leave it stuck in a write. Its signals are
  // blocked: a write to a pipe whose reader went must fail with EPIPE, not end the trial with a
  // SIGPIPE.
  signal_blocked_thread([shared = shared_] { shared->run(); }).detach();
}

MetricLinePrinter::~MetricLinePrinter() {
  const auto give_up = Clock::now() + shared_->final_drain;
  std::unique_lock lock(shared_->mutex);
  shared_->stopping = true;
  shared_->give_up_ns = give_up.time_since_epoch().count();
  shared_->changed.notify_all();
  // The thread sees the deadline within a poll slice, and says what it left unprinted within
  // kNoticeWait; only a write or an fflush that blocks (another writer filled the pipe between its
  // poll and its write) keeps it longer, and then it is left to the process's exit.
  shared_->changed.wait_until(lock, give_up + kPollSlice + kNoticeWait + std::chrono::seconds(1),
                              [this] { return shared_->done; });
}

void MetricLinePrinter::print(std::string lines) {
  if (lines.empty()) return;
  {
    std::lock_guard lock(shared_->mutex);
    if (shared_->output_gone) return;
    if (shared_->queued.size() + lines.size() > kMaxQueuedBytes) {
      shared_->left_out += lines_in(lines);
      return;
    }
    shared_->queued += lines;
  }
  shared_->changed.notify_all();
}

}  // namespace dlx::detail
