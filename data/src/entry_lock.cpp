#include "entry_lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

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

// F_OFD_SETLK(W) on the whole file; false only for a non-blocking request that conflicts.
bool set_lock(int fd, short type, bool wait, const fs::path& path) {
  struct flock request {};
  request.l_type = type;
  request.l_whence = SEEK_SET;
  for (;;) {
    if (::fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &request) == 0) return true;
    if (errno == EINTR) continue;
    if (!wait && (errno == EAGAIN || errno == EACCES)) return false;
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
    UniqueFd fd = open_lock_file(path);
    set_lock(fd.get(), mode == LockMode::shared ? F_RDLCK : F_WRLCK, true, path);
    if (still_linked(fd.get(), path)) return EntryLock(std::move(fd), path);
  }
}

EntryLock EntryLock::try_exclusive(const fs::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return {};
    lock_failed(path, "open");
  }
  if (!set_lock(fd.get(), F_WRLCK, false, path) || !still_linked(fd.get(), path)) return {};
  return EntryLock(std::move(fd), path);
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

void EntryLock::downgrade_to_shared() { set_lock(fd_.get(), F_RDLCK, true, path_); }

void EntryLock::release_shared_take_exclusive() {
  fd_.reset();
  *this = acquire(path_, LockMode::exclusive);
}

void EntryLock::remove_file() {
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT) lock_failed(path_, "remove");
}

}  // namespace dlx::data
