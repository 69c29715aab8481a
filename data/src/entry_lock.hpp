// SPDX-License-Identifier: Apache-2.0
#pragma once
// The lock of one cache entry, data/<key>.lock: common's FileLock with Linux open-file-description
// (OFD) fcntl locks.
// Unlike flock they convert from exclusive to shared atomically (no window in which an evictor
// could take the entry between its copy and its use), and unlike classic POSIX locks they belong
// to the open file, so two threads of one process exclude each other and closing another
// descriptor of the file does not drop them.
//
// An evictor unlinks the lock file with the entry. A process that opened the old file before the
// unlink and then got its lock holds a lock nobody else will ever ask for, so every acquisition
// checks that the name still names the locked file and starts again when it does not.
// The file is reached relative to the cache directory's handle (cache_dir.hpp), never by path.
#include <filesystem>
#include <string>

#include "dlx/common/file_lock.hpp"
#include "dlx/common/unique_fd.hpp"

namespace dlx::data {

using dlx::LockMode;

class EntryLock {
 public:
  EntryLock() = default;
  // Blocks until the lock `name` of the directory `dir` is held in `mode`; creates the file (0600)
  // when missing. `shown` is its path, for messages.
  static EntryLock acquire(int dir, const std::string& name, const std::filesystem::path& shown, LockMode mode);
  // Without blocking: an empty EntryLock when another process holds the lock (or the file is gone).
  static EntryLock try_exclusive(int dir, const std::string& name, const std::filesystem::path& shown);
  // True when some open file description holds a lock on it (for `dlx data ls`); false when there
  // is no such file.
  static bool held_by_anyone(int dir, const std::string& name, const std::filesystem::path& shown);

  explicit operator bool() const noexcept { return lock_.held(); }
  void downgrade_to_shared();  // atomic: at no instant is the entry unlocked
  void release_shared_take_exclusive();  // shared -> exclusive, blocking (not atomic: re-check after)
  // Unlinks the lock file while holding it exclusively (the entry is gone).
  void remove_file();
  FileLock release() noexcept { return std::move(lock_); }

 private:
  EntryLock(FileLock lock, UniqueFd dir, std::string name)
      : lock_(std::move(lock)), dir_(std::move(dir)), name_(std::move(name)) {}
  FileLock lock_;
  UniqueFd dir_;  // a duplicate of the cache directory's descriptor
  std::string name_;
};

}  // namespace dlx::data
