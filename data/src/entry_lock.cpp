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

[[noreturn]] void lock_failed(const fs::path& path, const char* what) {
  throw DataError(fmt::format("cannot {} the cache entry lock {}: {} (is the node-local directory on a file system "
                              "without fcntl locks?)", what, path.string(), std::strerror(errno)));
}

UniqueFd open_lock_file(const fs::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) lock_failed(path, "open");
  return fd;
}

// Runs one FileLock call, turning its SystemError into a DataError with the cache's hint.
template <typename Call>
auto locked(const fs::path& path, Call&& call) {
  try {
    return call();
  } catch (const SystemError& e) {
    errno = e.error_number();
    lock_failed(path, "lock");
  }
}

// The path still names the file `fd` has open (an evictor has not unlinked it meanwhile).
bool still_linked(int fd, const fs::path& path) {
  struct stat open_file {}, named {};
  if (::fstat(fd, &open_file) != 0) return false;
  if (::lstat(path.c_str(), &named) != 0) return false;
  return open_file.st_nlink > 0 && open_file.st_ino == named.st_ino && open_file.st_dev == named.st_dev;
}

}  // namespace

EntryLock EntryLock::acquire(const fs::path& path, LockMode mode) {
  for (;;) {
    FileLock lock(open_lock_file(path), path, LockOwner::description);
    locked(path, [&] { lock.lock(mode); });
    if (still_linked(lock.fd(), path)) return EntryLock(std::move(lock));
  }
}

EntryLock EntryLock::try_exclusive(const fs::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return {};
    lock_failed(path, "open");
  }
  FileLock lock(std::move(fd), path, LockOwner::description);
  if (!locked(path, [&] { return lock.try_lock(LockMode::exclusive); }) || !still_linked(lock.fd(), path)) return {};
  return EntryLock(std::move(lock));
}

bool EntryLock::held_by_anyone(const fs::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return false;
  struct flock probe {};
  probe.l_type = F_WRLCK;
  probe.l_whence = SEEK_SET;
  if (::fcntl(fd.get(), F_OFD_GETLK, &probe) != 0) lock_failed(path, "test");
  return probe.l_type != F_UNLCK;
}

void EntryLock::downgrade_to_shared() {
  locked(lock_.path(), [&] { lock_.lock(LockMode::shared); });
}

void EntryLock::release_shared_take_exclusive() {
  const fs::path path = lock_.path();
  lock_ = FileLock();
  *this = acquire(path, LockMode::exclusive);
}

void EntryLock::remove_file() {
  if (::unlink(lock_.path().c_str()) != 0 && errno != ENOENT) lock_failed(lock_.path(), "remove");
}

}  // namespace dlx::data
