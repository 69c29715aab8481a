// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/output_tee.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <optional>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "dlx/common/signal_blocked_thread.hpp"

namespace dlx::launch {

namespace {

constexpr std::size_t kReadSize = 64 << 10;
constexpr int kPipeSize = 1 << 20;

struct Pipe {
  UniqueFd read, write;
};

Pipe make_pipe() {
  std::array<int, 2> fds{};
  if (::pipe2(fds.data(), O_CLOEXEC) != 0) throw SystemError("cannot create a pipe for the trial's log", errno);
  // Room for a burst while the log's file system is slow; the default (64 KiB) where not allowed.
  (void)::fcntl(fds[1], F_SETPIPE_SZ, kPipeSize);
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// Writes all of `data` to `fd`, waiting when it is non-blocking and full. False on an error.
bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n > 0) {
      data += n;
      size -= static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      pollfd ready{fd, POLLOUT, 0};
      if (::poll(&ready, 1, -1) < 0 && errno != EINTR) return false;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string truncation_marker(std::uint64_t max_bytes) {
  return fmt::format("[dlx-launch: this log stops here: it reached its cap of {} bytes "
                     "(DLX_LOG_MAX_MB); the rest of this attempt's output is in Slurm's output "
                     "file only]\n",
                     max_bytes);
}

namespace {

// The log's side of the copy: every byte up to the cap, then (at the first byte over it, or a
// failed write) the truncation marker, once, and nothing more.
class CappedLog {
 public:
  CappedLog(int fd, std::uint64_t max_bytes, TeeResult& result)
      : fd_(fd), max_bytes_(max_bytes), result_(result), logging_(fd >= 0 && max_bytes > 0) {}

  void write(const char* data, std::size_t size) {
    if (!logging_) return;
    const auto room = max_bytes_ - result_.logged_bytes;
    const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(room, size));
    if (!write_all(fd_, data, take)) {
      stop();
      return;
    }
    result_.logged_bytes += take;
    if (take > 0) last_logged_ = data[take - 1];
    // At the cap, the marker comes with the first byte that does not fit (a log that ends
    // exactly at the cap is whole).
    if (take < size) stop();
  }

 private:
  void stop() {
    logging_ = false;
    result_.truncated = true;
    std::string marker = truncation_marker(max_bytes_);
    if (last_logged_ != '\n') marker.insert(marker.begin(), '\n');
    (void)write_all(fd_, marker.data(), marker.size());
  }

  int fd_;
  std::uint64_t max_bytes_;
  TeeResult& result_;
  bool logging_;
  char last_logged_ = '\n';
};

}  // namespace

OutputTee::OutputTee(UniqueFd log, int pass_out, int pass_err, TeeOptions options)
    : log_(std::move(log)), pass_out_(pass_out), pass_err_(pass_err), options_(options) {
  auto out = make_pipe();
  auto err = make_pipe();
  auto wake = make_pipe();
  out_read_ = std::move(out.read);
  out_write_ = std::move(out.write);
  err_read_ = std::move(err.read);
  err_write_ = std::move(err.write);
  wake_read_ = std::move(wake.read);
  wake_write_ = std::move(wake.write);
  thread_ = signal_blocked_thread([this] { run(); });
}

OutputTee::~OutputTee() {
  try {
    finish();
  } catch (...) {
  }
}

TeeResult OutputTee::finish() {
  if (finished_) return result_;
  finished_ = true;
  out_write_.reset();
  err_write_.reset();
  const char wake = 1;
  (void)!::write(wake_write_.get(), &wake, 1);
  if (thread_.joinable()) thread_.join();
  out_read_.reset();
  err_read_.reset();
  return result_;
}

bool OutputTee::append_to_log(std::string_view text) {
  if (!finished_ || result_.truncated || !log_) return false;
  if (text.size() > options_.max_bytes - result_.logged_bytes) return false;
  if (!write_all(log_.get(), text.data(), text.size())) return false;
  result_.logged_bytes += text.size();
  (void)::fdatasync(log_.get());
  return true;
}

void OutputTee::run() {
  std::vector<char> buffer(kReadSize);
  std::array<int, 2> pass{pass_out_, pass_err_};
  std::array<pollfd, 3> fds{pollfd{out_read_.get(), POLLIN, 0}, pollfd{err_read_.get(), POLLIN, 0},
                            pollfd{wake_read_.get(), POLLIN, 0}};
  CappedLog log(log_.get(), options_.max_bytes, result_);
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> deadline;  // set by finish(): the grace to drain what is left
  int open_streams = 2;
  while (open_streams > 0) {
    int timeout = -1;
    if (deadline) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now()).count();
      if (left <= 0) break;
      timeout = static_cast<int>(left);
    }
    const int ready = ::poll(fds.data(), fds.size(), timeout);
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (ready == 0) break;  // the grace after finish() is over
    for (std::size_t i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      // Stderr is read and its tail kept under the lock, so that stderr_tail() (which waits for
      // the pipe to be empty, then takes the lock) sees every byte the pipe held.
      std::unique_lock tail_lock(tail_mutex_, std::defer_lock);
      if (i == 1) tail_lock.lock();
      const ssize_t n = ::read(fds[i].fd, buffer.data(), buffer.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n > 0 && i == 1) keep_tail(buffer.data(), static_cast<std::size_t>(n));
      if (tail_lock.owns_lock()) tail_lock.unlock();
      if (n <= 0) {  // end of file: every writer closed it
        fds[i].fd = -1;
        --open_streams;
        continue;
      }
      const auto size = static_cast<std::size_t>(n);
      result_.seen_bytes += size;
      if (pass[i] >= 0 && !write_all(pass[i], buffer.data(), size)) pass[i] = -1;
      log.write(buffer.data(), size);
    }
    if (fds[2].fd >= 0 && fds[2].revents != 0) {
      deadline = Clock::now() + options_.drain_grace;
      fds[2].fd = -1;
    }
  }
  if (log_.get() >= 0) (void)::fdatasync(log_.get());
}

void OutputTee::keep_tail(const char* data, std::size_t size) {
  if (size >= kStderrTailBytes) {
    stderr_tail_.assign(data + size - kStderrTailBytes, kStderrTailBytes);
    return;
  }
  stderr_tail_.append(data, size);
  if (stderr_tail_.size() > kStderrTailBytes) stderr_tail_.erase(0, stderr_tail_.size() - kStderrTailBytes);
}

std::string OutputTee::stderr_tail(std::chrono::milliseconds settle) {
  if (!finished_) {
    const auto deadline = std::chrono::steady_clock::now() + settle;
    int unread = 0;
    while (::ioctl(err_read_.get(), FIONREAD, &unread) == 0 && unread > 0 &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  std::lock_guard lock(tail_mutex_);
  return stderr_tail_;
}

StdioThroughTee::StdioThroughTee(UniqueFd log, TeeOptions options)
    : saved_out_(::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3)),
      saved_err_(::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3)),
      tee_(std::move(log), saved_out_.get(), saved_err_.get(), options) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (::dup2(tee_.out_fd(), STDOUT_FILENO) < 0 || ::dup2(tee_.err_fd(), STDERR_FILENO) < 0) {
    const int error = errno;
    restore();
    throw SystemError("cannot redirect the output into the trial's log", error);
  }
}

StdioThroughTee::~StdioThroughTee() {
  try {
    restore();
  } catch (...) {
  }
}

TeeResult StdioThroughTee::restore() {
  if (!restored_) {
    restored_ = true;
    std::fflush(stdout);
    std::fflush(stderr);
    // A stream that was closed (-1) stays closed: closing the pipe's copy is what matters.
    if (saved_out_) ::dup2(saved_out_.get(), STDOUT_FILENO); else ::close(STDOUT_FILENO);
    if (saved_err_) ::dup2(saved_err_.get(), STDERR_FILENO); else ::close(STDERR_FILENO);
  }
  return tee_.finish();
}

TeeResult StdioThroughTee::restore_and_log(std::string_view line) {
  restore();
  tee_.append_to_log(line);
  return tee_.finish();
}

}  // namespace dlx::launch
