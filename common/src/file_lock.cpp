// SPDX-License-Identifier: Apache-2.0
// Whole-file fcntl locks (file_lock.hpp: which kind where, and why).
#include "dlx/common/file_lock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>
#include <system_error>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "dlx/common/signal_blocked_thread.hpp"

namespace dlx {
namespace {

struct Commands {
  int set, wait, get;
};

Commands commands_of(LockOwner owner) {
  if (owner == LockOwner::description) return {F_OFD_SETLK, F_OFD_SETLKW, F_OFD_GETLK};
  return {F_SETLK, F_SETLKW, F_GETLK};
}

struct flock whole_file(short type) {
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;  // l_start = l_len = 0: the whole file, however long it grows
  return lock;
}

short type_of(LockMode mode) { return mode == LockMode::exclusive ? F_WRLCK : F_RDLCK; }

[[noreturn]] void throw_lock_error(const std::filesystem::path& path, LockOwner owner, int error) {
  if (error == ENOLCK) {
    throw SystemError::with_message(
        fmt::format("cannot lock {} (the file system refuses fcntl locks, which dlx needs across nodes: on NFS, "
                    "lockd/statd must run on the clients and the mount must not use `nolock`; on Lustre, mount "
                    "with `-o flock`)",
                    path.string()),
        error);
  }
  if (error == EINVAL && owner == LockOwner::description) {
    throw SystemError::with_message(
        fmt::format("cannot lock {}: this kernel has no open file description locks (F_OFD_SETLK, Linux 3.15 or "
                    "later)",
                    path.string()),
        error);
  }
  throw SystemError(fmt::format("cannot lock {}", path.string()), error);
}

// F_SETLKW until granted or an error other than EINTR; the errno, or 0 when granted.
int wait_for_lock(int fd, int command, short type) {
  auto lock = whole_file(type);
  while (::fcntl(fd, command, &lock) != 0) {
    if (errno != EINTR) return errno;
  }
  return 0;
}

using Clock = FileLock::Clock;

constexpr std::chrono::microseconds kFirstPause{200};
constexpr std::chrono::microseconds kMaxPause{10'000};

}  // namespace

FileLock::FileLock(UniqueFd fd, std::filesystem::path path, LockOwner owner)
    : fd_(std::move(fd)), path_(std::move(path)), owner_(owner) {}

FileLock::FileLock(FileLock&& other) noexcept
    : fd_(std::move(other.fd_)),
      path_(std::move(other.path_)),
      owner_(other.owner_),
      held_(std::exchange(other.held_, false)) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    unlock();
    fd_ = std::move(other.fd_);
    path_ = std::move(other.path_);
    owner_ = other.owner_;
    held_ = std::exchange(other.held_, false);
  }
  return *this;
}

FileLock::~FileLock() { unlock(); }

bool FileLock::try_lock(LockMode mode) {
  auto lock = whole_file(type_of(mode));
  while (::fcntl(fd_.get(), commands_of(owner_).set, &lock) != 0) {
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EACCES) return false;
    throw_lock_error(path_, owner_, errno);
  }
  held_ = true;
  return true;
}

void FileLock::lock(LockMode mode) {
  if (const int error = wait_for_lock(fd_.get(), commands_of(owner_).wait, type_of(mode)); error != 0) {
    throw_lock_error(path_, owner_, error);
  }
  held_ = true;
}

bool FileLock::lock_until(LockMode mode, Clock::time_point deadline, std::function<void()> after_giving_up) {
  // What the helper thread and this one share; the helper owns the descriptor once abandoned.
  struct Pending {
    std::mutex mutex;
    std::condition_variable finished;
    bool done = false;
    bool abandoned = false;
    int error = 0;
    UniqueFd fd;
    std::function<void()> after_giving_up;
  };
  auto pending = std::make_shared<Pending>();
  pending->fd = std::move(fd_);
  pending->after_giving_up = std::move(after_giving_up);
  const int command = commands_of(owner_).wait;
  const short type = type_of(mode);
  const auto wait = [pending, command, type] {
    const int error = wait_for_lock(pending->fd.get(), command, type);
    std::unique_lock<std::mutex> guard(pending->mutex);
    if (pending->abandoned) {
      pending->fd.reset();  // releases the lock, if it got it
      auto given_up = std::move(pending->after_giving_up);
      guard.unlock();
      if (given_up) given_up();
      return;
    }
    pending->error = error;
    pending->done = true;
    guard.unlock();
    pending->finished.notify_one();
  };
  try {
    signal_blocked_thread(wait).detach();  // the process's signals stay with the threads that take them
  } catch (const std::system_error&) {
    fd_ = std::move(pending->fd);
    if (poll_until(deadline, [&] { return try_lock(mode); })) return true;
    fd_.reset();  // as the helper would: closed first, then the caller's follow-up
    if (pending->after_giving_up) pending->after_giving_up();
    return false;
  }
  std::unique_lock<std::mutex> guard(pending->mutex);
  if (!pending->finished.wait_until(guard, deadline, [&] { return pending->done; })) {
    pending->abandoned = true;
    return false;
  }
  fd_ = std::move(pending->fd);
  if (pending->error != 0) throw_lock_error(path_, owner_, pending->error);
  held_ = true;
  return true;
}

void FileLock::unlock() noexcept {
  if (!held_) return;
  auto lock = whole_file(F_UNLCK);
  ::fcntl(fd_.get(), commands_of(owner_).set, &lock);
  held_ = false;
}

std::string FileLock::holder(LockMode mode) const {
  auto lock = whole_file(type_of(mode));
  if (::fcntl(fd_.get(), commands_of(owner_).get, &lock) != 0) return "its holder could not be asked";
  if (lock.l_type == F_UNLCK) return "released at the last moment; try again";
  if (lock.l_pid <= 0) return "held by a process the file system does not name";
  return fmt::format("held by process {}; on a shared file system that process may run on another node", lock.l_pid);
}

bool poll_until(Clock::time_point deadline, const std::function<bool()>& attempt) {
  std::minstd_rand random(static_cast<std::uint32_t>(::getpid()) ^
                          static_cast<std::uint32_t>(Clock::now().time_since_epoch().count()));
  auto next = kFirstPause;
  while (!attempt()) {
    const auto now = Clock::now();
    if (now >= deadline) return attempt();
    const auto whole = next.count();
    const auto drawn = std::chrono::microseconds(std::uniform_int_distribution<long>(whole / 2, whole)(random));
    std::this_thread::sleep_for(std::min<Clock::duration>(drawn, deadline - now));
    next = std::min(next * 2, kMaxPause);
  }
  return true;
}

}  // namespace dlx
