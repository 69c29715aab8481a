// SPDX-License-Identifier: Apache-2.0
#pragma once
// The journal writers' lock (journal.hpp, append protocol steps 1 and 2): this process's turn for
// the journal, then journal.lock, then the compatibility lock on the journal itself, all within
// one deadline.
#include <chrono>
#include <filesystem>

#include "dlx/common/file_lock.hpp"

namespace dlx::searcher::detail {

inline constexpr const char* kJournalLockTimeoutVariable = "DLX_JOURNAL_LOCK_TIMEOUT";
inline constexpr std::chrono::seconds kDefaultJournalLockTimeout{120};
inline constexpr double kMaxJournalLockTimeoutSeconds = 7 * 24 * 3600;

// How long a writer waits for its locks: DLX_JOURNAL_LOCK_TIMEOUT (seconds, 0 to 604800,
// fractions allowed) when set and not empty, else 120 s. Throws JournalError for any other value.
std::chrono::milliseconds journal_lock_timeout();

class ProcessTurn;

class JournalWriterLock {
 public:
  // Takes the locks for the journal at `journal_path`, open read-write as `journal_fd`; throws
  // JournalError once the deadline has passed, naming the file, the wait and the holder.
  JournalWriterLock(const std::filesystem::path& journal_path, int journal_fd);
  JournalWriterLock(const JournalWriterLock&) = delete;
  JournalWriterLock& operator=(const JournalWriterLock&) = delete;
  // Releases the journal's lock, then journal.lock (closing it), then this process's turn (the
  // members' destructors, in reverse order of declaration).
  ~JournalWriterLock() = default;

 private:
  // This process's turn for the journal, handed back on destruction (or handed over to a thread
  // still waiting for journal.lock after the deadline; journal_lock.cpp).
  struct Turn {
    ProcessTurn* turn = nullptr;
    Turn() = default;
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;
    ~Turn();
  };
  Turn turn_;
  FileLock lock_;          // journal.lock: classic fcntl, which the shared file systems forward
  FileLock journal_lock_;  // the compatibility lock on the journal: OFD (file_lock.hpp)
};

}  // namespace dlx::searcher::detail
