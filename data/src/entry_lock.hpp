#pragma once
// The lock of one cache entry, data/<key>.lock: Linux open-file-description (OFD) fcntl locks.
// Unlike flock they convert from exclusive to shared atomically (no window in which an evictor
// could take the entry between its copy and its use), and unlike classic POSIX locks they belong
// to the open file, so two threads of one process exclude each other and closing another
// descriptor of the file does not drop them.
//
// An evictor unlinks the lock file with the entry. A process that opened the old file before the
// unlink and then got its lock holds a lock nobody else will ever ask for, so every acquisition
// checks that the path still names the locked file and starts again when it does not.
#include <filesystem>

#include "dlx/common/unique_fd.hpp"

namespace dlx::data {

enum class LockMode { shared, exclusive };

class EntryLock {
 public:
  EntryLock() = default;
  // Blocks until the lock is held in `mode`; creates the file (0600) when missing.
  static EntryLock acquire(const std::filesystem::path& path, LockMode mode);
  // Without blocking: an empty EntryLock when another process holds the lock (or the file is gone).
  static EntryLock try_exclusive(const std::filesystem::path& path);
  // True when some open file description holds a lock on `path` (for `dlx data ls`); false when
  // there is no such file.
  static bool held_by_anyone(const std::filesystem::path& path);

  explicit operator bool() const noexcept { return static_cast<bool>(fd_); }
  void downgrade_to_shared();  // atomic: at no instant is the entry unlocked
  void release_shared_take_exclusive();  // shared -> exclusive, blocking (not atomic: re-check after)
  // Unlinks the lock file while holding it exclusively (the entry is gone).
  void remove_file();
  UniqueFd release() noexcept { return std::move(fd_); }

 private:
  EntryLock(UniqueFd fd, std::filesystem::path path) : fd_(std::move(fd)), path_(std::move(path)) {}
  UniqueFd fd_;
  std::filesystem::path path_;
};

}  // namespace dlx::data
