// SPDX-License-Identifier: Apache-2.0
#pragma once
// A forked process that opens a file and holds a classic POSIX fcntl lock on it (as an older dlx,
// or any other program, takes one) until release() or destruction: what the lock tests need to
// see another process's lock, which a lock of their own process would not be.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include <catch2/catch.hpp>

namespace dlx::testing {

class ForkedLockHolder {
 public:
  // Opens `path` with `flags` (0600 when created) and takes lock `type` (F_RDLCK or F_WRLCK);
  // `in_child`, when given, runs first in the child (e.g. to change user) and false means fail.
  ForkedLockHolder(const std::filesystem::path& path, int flags, short type,
                   const std::function<bool()>& in_child = {}) {
    int ready[2], done[2];
    REQUIRE(::pipe(ready) == 0);
    REQUIRE(::pipe(done) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::close(ready[0]);
      ::close(done[1]);
      const int fd = !in_child || in_child() ? ::open(path.c_str(), flags | O_CLOEXEC, 0600) : -1;
      struct flock lock {};
      lock.l_type = type;
      lock.l_whence = SEEK_SET;
      const char ok = fd >= 0 && ::fcntl(fd, F_SETLK, &lock) == 0 ? 1 : 0;
      char byte = 0;
      if (::write(ready[1], &ok, 1) != 1) ::_exit(1);
      // Returns at end of file, when the parent closed its end; what it read does not matter.
      [[maybe_unused]] const ssize_t waited = ::read(done[0], &byte, 1);
      ::_exit(0);
    }
    ::close(ready[1]);
    ::close(done[0]);
    done_ = done[1];
    char ok = 0;
    locked_ = ::read(ready[0], &ok, 1) == 1 && ok == 1;
    ::close(ready[0]);
  }
  ~ForkedLockHolder() { release(); }
  ForkedLockHolder(const ForkedLockHolder&) = delete;
  ForkedLockHolder& operator=(const ForkedLockHolder&) = delete;

  bool locked() const { return locked_; }
  pid_t pid() const { return pid_; }
  void release() {
    if (pid_ <= 0) return;
    ::close(done_);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int done_ = -1;
  bool locked_ = false;
};

}  // namespace dlx::testing
