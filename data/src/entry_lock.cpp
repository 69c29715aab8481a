// SPDX-License-Identifier: Apache-2.0
#include "entry_lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "dlx/data/stage.hpp"

namespace dlx::data {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void lock_failed(const fs::path& path, const char* what, int error = errno) {
  throw DataError(fmt::format("cannot {} the cache entry lock {}: {} (is the node-local directory on a file system "
                              "without fcntl locks?)", what, path.string(), std::strerror(error)));
}

UniqueFd duplicate(int dir, const fs::path& shown) {
  UniqueFd copy(::fcntl(dir, F_DUPFD_CLOEXEC, 0));
  if (!copy) lock_failed(shown, "open");
  return copy;
}

// Runs one FileLock call, turning its SystemError into a DataError with the cache's hint.
template <typename Call>
auto locked(const fs::path& path, Call&& call) {
  try {
    return call();
  } catch (const SystemError& e) {
    lock_failed(path, "lock", e.error_number());
  }
}

// `name` in `dir` still names the file `fd` has open (an evictor has not unlinked it meanwhile).
bool still_linked(int fd, int dir, const std::string& name) {
  struct stat open_file {}, named {};
  if (::fstat(fd, &open_file) != 0) return false;
  if (::fstatat(dir, name.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0) return false;
  return open_file.st_nlink > 0 && open_file.st_ino == named.st_ino && open_file.st_dev == named.st_dev;
}

}  // namespace

EntryLock EntryLock::acquire(int dir, const std::string& name, const fs::path& shown, LockMode mode) {
  for (;;) {
    UniqueFd fd(::openat(dir, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) lock_failed(shown, "open");
    FileLock lock(std::move(fd), shown, LockOwner::description);
    locked(shown, [&] { lock.lock(mode); });
    if (still_linked(lock.fd(), dir, name)) return EntryLock(std::move(lock), duplicate(dir, shown), name);
  }
}

EntryLock EntryLock::try_exclusive(int dir, const std::string& name, const fs::path& shown) {
  UniqueFd fd(::openat(dir, name.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return {};
    lock_failed(shown, "open");
  }
  FileLock lock(std::move(fd), shown, LockOwner::description);
  if (!locked(shown, [&] { return lock.try_lock(LockMode::exclusive); }) || !still_linked(lock.fd(), dir, name)) {
    return {};
  }
  return EntryLock(std::move(lock), duplicate(dir, shown), name);
}

bool EntryLock::held_by_anyone(int dir, const std::string& name, const fs::path& shown) {
  UniqueFd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return false;
  struct flock probe {};
  probe.l_type = F_WRLCK;
  probe.l_whence = SEEK_SET;
  if (::fcntl(fd.get(), F_OFD_GETLK, &probe) != 0) lock_failed(shown, "test");
  return probe.l_type != F_UNLCK;
}

void EntryLock::downgrade_to_shared() {
  locked(lock_.path(), [&] { lock_.lock(LockMode::shared); });
}

void EntryLock::release_shared_take_exclusive() {
  const fs::path shown = lock_.path();
  UniqueFd dir = std::move(dir_);
  const std::string name = name_;
  lock_ = FileLock();
  *this = acquire(dir.get(), name, shown, LockMode::exclusive);
}

void EntryLock::remove_file() {
  if (::unlinkat(dir_.get(), name_.c_str(), 0) != 0 && errno != ENOENT) lock_failed(lock_.path(), "remove");
}

}  // namespace dlx::data
