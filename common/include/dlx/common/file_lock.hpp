// SPDX-License-Identifier: Apache-2.0
#pragma once
// A whole-file fcntl lock on a descriptor it owns: try (never waits), lock (waits for as long as
// it takes) and lock_until (waits until a deadline, on a helper thread, so that the waiter is woken
// the moment the lock is free and still gives up on time), and who holds it, for messages.
//
// Which fcntl lock, decided per use by LockOwner:
//   process      classic POSIX locks (F_SETLK, F_SETLKW, F_GETLK). They belong to the process: a
//                second thread is granted the lock its sibling holds, and closing ANY descriptor
//                of the file in the process drops it. Used for the locks that must hold across
//                nodes, the searcher's journal.lock and journal.snapshot.lock, because those are
//                what the shared file systems forward to their lock server: NFS (NLM through
//                lockd/statd, or NFSv4) and Lustre mounted `-o flock`; FUSE-based distributed file
//                systems cannot tell an open-file-description lock from a POSIX one and treat it
//                as the process's anyway, so OFD locks would promise there what they cannot keep.
//                The journal lives with the per-process semantics instead: its threads take turns
//                before locking, and it keeps one descriptor of the lock file open while it holds
//                the lock (journal.hpp, append protocol step 1).
//   description  open-file-description locks (F_OFD_SETLK, F_OFD_SETLKW, F_OFD_GETLK; Linux 3.15):
//                they belong to the open file, so threads with their own descriptors exclude each
//                other and closing another descriptor of the file drops nothing. Used where those
//                per-process semantics would bite and the lock never leaves one node: the journal's
//                compatibility lock on the journal itself (this process may close a reader's
//                descriptor of the journal meanwhile) and dlx-launch's node-local code copy lock
//                (launch/code_workdir.hpp). A kernel without them refuses with EINVAL.
// POSIX and OFD locks on one file conflict with each other, so the two kinds exclude each other.
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>

#include "dlx/common/unique_fd.hpp"

namespace dlx {

enum class LockOwner { process, description };
enum class LockMode { shared, exclusive };

class FileLock {
 public:
  using Clock = std::chrono::steady_clock;

  FileLock() = default;
  // Takes `fd`, open on `path` (named in messages), unlocked. A shared lock needs a descriptor
  // open for reading, an exclusive one a descriptor open for writing.
  FileLock(UniqueFd fd, std::filesystem::path path, LockOwner owner);
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  // Releases the lock, then closes the descriptor.
  ~FileLock();

  // One attempt at `mode` (a held lock is converted: shared to exclusive and back): true when
  // granted, false when another owner's lock refuses it. Throws SystemError naming the path for
  // anything else: ENOLCK with what the file system needs; EINVAL for `description` on a kernel
  // without OFD locks.
  bool try_lock(LockMode mode);

  // Waits until granted, as long as it takes. Throws as try_lock does.
  void lock(LockMode mode);

  // Waits until granted or `deadline`. The wait blocks in the kernel (or the NFS client) on a
  // helper thread, with every signal blocked, in fair competition with the other waiters, while
  // this thread waits for it until the deadline; polling instead made the longest waiters poll
  // least often and lose. Returns true with the lock held. At the deadline it returns false with
  // this FileLock empty: the helper keeps the descriptor and, once it has the lock, releases it at
  // once, closing the descriptor, then calls `after_giving_up` (the journal hands its process turn
  // back there: with classic locks no other thread of the process may lock the file before that
  // descriptor is closed). A process that cannot start a thread polls until the deadline instead,
  // then closes the descriptor and calls `after_giving_up` itself before returning false. Throws
  // as try_lock does, and then never calls `after_giving_up`.
  bool lock_until(LockMode mode, Clock::time_point deadline, std::function<void()> after_giving_up);

  // Releases the lock, keeping the descriptor.
  void unlock() noexcept;

  // Who holds a lock that conflicts with `mode`, in words for a message: "held by process N; on a
  // shared file system that process may run on another node", or why nobody can be named. The
  // owner's own locks do not count (F_GETLK ignores the process's, F_OFD_GETLK the description's).
  std::string holder(LockMode mode) const;

  bool held() const noexcept { return held_; }
  int fd() const noexcept { return fd_.get(); }
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  UniqueFd fd_;
  std::filesystem::path path_;
  LockOwner owner_ = LockOwner::process;
  bool held_ = false;
};

// Calls `attempt` until it returns true or the deadline passes (then once more, at the deadline),
// sleeping between attempts 0.2 ms doubling up to 10 ms, each drawn from [half, whole] so that
// waiters on many nodes do not retry in step. The cap is low because the longest waiters poll
// least often; it exists because on NFS each poll is one request to the lock server.
bool poll_until(FileLock::Clock::time_point deadline, const std::function<bool()>& attempt);

}  // namespace dlx
