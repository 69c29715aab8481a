// SPDX-License-Identifier: Apache-2.0
// FileLock (dlx/common/file_lock.hpp): try refuses while another process holds the lock and names
// it; lock_until gives up at the deadline and its helper hands the follow-up over once it has let
// the lock go; OFD locks exclude the descriptors of one process and survive closing another
// descriptor of the file, classic ones do neither (why the journal's threads take turns). Real
// files, real processes (fork).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "dlx/common/file_lock.hpp"
#include "forked_lock_holder.hpp"
#include "searcher_temp_dir.hpp"

namespace fs = std::filesystem;
using dlx::FileLock;
using dlx::LockMode;
using dlx::LockOwner;
using dlx::UniqueFd;
using Clock = std::chrono::steady_clock;

namespace {

UniqueFd open_rw(const fs::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  REQUIRE(fd);
  return fd;
}

// Whether another process would be granted an exclusive classic lock on `path` right now.
bool free_for_another_process(const fs::path& path) {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    ::_exit(fd >= 0 && ::fcntl(fd, F_SETLK, &lock) == 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// A forked process holding an exclusive classic lock on `path` until release() or destruction.
struct Holder : dlx::testing::ForkedLockHolder {
  explicit Holder(const fs::path& path) : ForkedLockHolder(path, O_RDWR, F_WRLCK) { REQUIRE(locked()); }
};

}  // namespace

TEST_CASE("FileLock: try refuses while another process holds the lock, and names that process", "[common][lock]") {
  dlx::testing::TempDir dir;
  const auto path = dir.path / "a.lock";
  const auto owner = GENERATE(LockOwner::process, LockOwner::description);
  FileLock lock(open_rw(path), path, owner);
  {
    Holder holder(path);
    CHECK_FALSE(lock.try_lock(LockMode::exclusive));
    CHECK_FALSE(lock.try_lock(LockMode::shared));
    CHECK_FALSE(lock.held());
    CHECK(lock.holder(LockMode::shared) ==
          fmt::format("held by process {}; on a shared file system that process may run on another node",
                      holder.pid()));
  }
  CHECK(lock.holder(LockMode::exclusive) == "released at the last moment; try again");
  REQUIRE(lock.try_lock(LockMode::exclusive));
  CHECK(lock.held());
  CHECK_FALSE(free_for_another_process(path));
  lock.unlock();
  CHECK(free_for_another_process(path));
  lock.lock(LockMode::exclusive);  // free: granted at once
  CHECK_FALSE(free_for_another_process(path));
}

TEST_CASE("FileLock: lock_until gives up at the deadline, and its helper lets the lock go, then calls back",
          "[common][lock]") {
  dlx::testing::TempDir dir;
  const auto path = dir.path / "a.lock";
  const auto owner = GENERATE(LockOwner::process, LockOwner::description);
  FileLock lock(open_rw(path), path, owner);
  Holder holder(path);
  std::atomic<bool> called{false};
  const auto start = Clock::now();
  CHECK_FALSE(lock.lock_until(LockMode::exclusive, start + std::chrono::milliseconds(300), [&] { called = true; }));
  const auto waited = Clock::now() - start;
  CHECK(waited >= std::chrono::milliseconds(300));
  CHECK(waited < std::chrono::seconds(5));
  CHECK(lock.fd() < 0);  // the helper has the descriptor
  CHECK_FALSE(called);   // it is still waiting for the lock
  holder.release();
  for (int i = 0; i < 500 && !called; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(called);
  CHECK(free_for_another_process(path));  // the helper got the lock and let it go
}

TEST_CASE("FileLock: lock_until is granted as soon as the holder lets go", "[common][lock]") {
  dlx::testing::TempDir dir;
  const auto path = dir.path / "a.lock";
  FileLock lock(open_rw(path), path, LockOwner::process);
  Holder holder(path);
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    holder.release();
  });
  bool called = false;
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  const auto got = lock.lock_until(LockMode::exclusive, deadline, [&] { called = true; });
  release.join();
  CHECK(got);
  CHECK(lock.held());
  CHECK_FALSE(called);
  CHECK_FALSE(free_for_another_process(path));
}

TEST_CASE("FileLock: OFD locks exclude one process's descriptors and survive closing another, classic ones "
          "do neither",
          "[common][lock]") {
  dlx::testing::TempDir dir;
  const auto path = dir.path / "a.lock";
  SECTION("description") {
    FileLock first(open_rw(path), path, LockOwner::description);
    FileLock second(open_rw(path), path, LockOwner::description);
    REQUIRE(first.try_lock(LockMode::exclusive));
    CHECK_FALSE(second.try_lock(LockMode::exclusive));
    CHECK(second.holder(LockMode::exclusive) == "held by a process the file system does not name");
    ::close(::open(path.c_str(), O_RDONLY | O_CLOEXEC));  // another descriptor of the file, closed
    CHECK_FALSE(free_for_another_process(path));
  }
  SECTION("process") {
    FileLock first(open_rw(path), path, LockOwner::process);
    FileLock second(open_rw(path), path, LockOwner::process);
    REQUIRE(first.try_lock(LockMode::exclusive));
    CHECK(second.try_lock(LockMode::exclusive));  // the same owner: the process
    ::close(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    CHECK(free_for_another_process(path));  // closing any descriptor dropped it
  }
}

TEST_CASE("FileLock: a descriptor that cannot lock is an error naming the file", "[common][lock]") {
  dlx::testing::TempDir dir;
  const auto path = dir.path / "a.lock";
  open_rw(path);
  FileLock lock(UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)), path, LockOwner::process);
  CHECK_THROWS_WITH(lock.try_lock(LockMode::exclusive),
                    "cannot lock " + path.string() + ": Bad file descriptor");
}
