// SPDX-License-Identifier: Apache-2.0
#pragma once
// How many times a file is opened, by any process, while an OpenCounter watches it (inotify's
// IN_OPEN: the kernel queues one event per open(2), so the count is complete once the processes
// that opened it have returned or exited). Used to show that a program reads a file once.
#include <sys/inotify.h>
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <stdexcept>

namespace dlx::testing {

class OpenCounter {
 public:
  explicit OpenCounter(const std::filesystem::path& file) : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    if (fd_ < 0 || ::inotify_add_watch(fd_, file.c_str(), IN_OPEN) < 0) {
      throw std::runtime_error("cannot watch " + file.string() + " with inotify");
    }
  }
  ~OpenCounter() { ::close(fd_); }
  OpenCounter(const OpenCounter&) = delete;
  OpenCounter& operator=(const OpenCounter&) = delete;

  // The opens queued since the last call (or since the watch began).
  int take() {
    int opens = 0;
    alignas(inotify_event) char buffer[4096];
    for (ssize_t n; (n = ::read(fd_, buffer, sizeof buffer)) > 0;) {
      for (std::size_t at = 0; at < static_cast<std::size_t>(n);) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
        if ((event->mask & IN_OPEN) != 0) ++opens;
        at += sizeof(inotify_event) + event->len;
      }
    }
    return opens;
  }

 private:
  int fd_;
};

}  // namespace dlx::testing
