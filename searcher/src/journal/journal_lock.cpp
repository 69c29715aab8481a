// SPDX-License-Identifier: Apache-2.0
// The journal writers' lock with a deadline (journal_lock.hpp; protocol in journal.hpp).
#include "journal_lock.hpp"

#include <fcntl.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "dlx/searcher/journal.hpp"
#include "journal_files.hpp"

namespace dlx::searcher {

std::filesystem::path journal_lock_path(const std::filesystem::path& journal_path) {
  std::filesystem::path lock = journal_path;
  lock += ".lock";
  return lock;
}

namespace detail {

// The turn of this process's threads for one journal. fcntl (POSIX) locks belong to the process:
// a second thread would be granted the lock its sibling holds, and closing any descriptor of
// journal.lock in this process would drop it. So threads take turns first. Not a mutex, because
// a writer that gives up at the deadline hands its turn over to the helper thread still waiting
// for journal.lock (FileLock::lock_until), which gives it back when it gets the lock.
class ProcessTurn {
 public:
  bool take_until(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!free_.wait_until(lock, deadline, [&] { return !busy_; })) return false;
    busy_ = true;
    return true;
  }
  void give_back() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      busy_ = false;
    }
    free_.notify_one();
  }

 private:
  std::mutex mutex_;
  std::condition_variable free_;
  bool busy_ = false;
};

JournalWriterLock::Turn::~Turn() {
  if (turn) turn->give_back();
}

namespace {

using Clock = std::chrono::steady_clock;
using Milliseconds = std::chrono::milliseconds;

// One turn per journal (by absolute path) this process ever writes, never freed: a helper thread
// may still use one while the process exits, so not even at exit.
ProcessTurn& journal_process_turn(const std::filesystem::path& lock_path) {
  static auto* guard = new std::mutex;
  static auto* by_path = new std::map<std::string, std::unique_ptr<ProcessTurn>>;
  std::error_code error;
  auto absolute = std::filesystem::absolute(lock_path, error);
  const std::string key = (error ? lock_path : absolute).lexically_normal().string();
  const std::lock_guard<std::mutex> lock(*guard);
  auto& slot = (*by_path)[key];
  if (!slot) slot = std::make_unique<ProcessTurn>();
  return *slot;
}

std::string wait_text(Milliseconds duration) {
  return fmt::format("{:g} s", static_cast<double>(duration.count()) / 1000.0);
}

// Only printable ASCII of a value echoed in a message, at most 40 characters of it.
std::string printable_setting(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 40)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (text.size() > 40) out += "...";
  return out;
}

// The holder of journal.lock, asked through a descriptor of its own after this process gave up
// waiting (the one it waited with belongs to the helper thread now). F_GETLK ignores this
// process's own locks, so the helper getting the lock meanwhile reads as "released".
std::string holder_after_giving_up(const std::filesystem::path& lock_path) {
  try {
    const FileLock probe(open_lock_file(lock_path), lock_path, LockOwner::process);
    return probe.holder(LockMode::exclusive);
  } catch (const Error&) {
    return "its holder could not be asked";
  }
}

// The journal's own descriptor again, for its compatibility lock: an OFD lock belongs to the open
// file description, which the copy shares, so the lock is the journal descriptor's.
UniqueFd copy_of(int journal_fd, const std::filesystem::path& journal_path) {
  UniqueFd copy(::fcntl(journal_fd, F_DUPFD_CLOEXEC, 0));
  if (!copy) throw SystemError(fmt::format("cannot lock {}", journal_path.string()), errno);
  return copy;
}

}  // namespace

std::chrono::milliseconds journal_lock_timeout() {
  const char* text = std::getenv(kJournalLockTimeoutVariable);
  if (!text || !*text) return kDefaultJournalLockTimeout;
  const std::string_view value(text);
  double seconds = -1;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (value.size() > 20 || error != std::errc() || end != value.data() + value.size() || !std::isfinite(seconds) ||
      seconds < 0 || seconds > kMaxJournalLockTimeoutSeconds) {
    throw JournalError(fmt::format("{}={}: not a number of seconds from 0 to {:g} (how long a journal writer waits "
                                   "for the journal's lock); unset it for the default, {} s",
                                   kJournalLockTimeoutVariable, printable_setting(value), kMaxJournalLockTimeoutSeconds,
                                   kDefaultJournalLockTimeout.count()));
  }
  return Milliseconds(static_cast<long>(std::llround(seconds * 1000)));
}

JournalWriterLock::JournalWriterLock(const std::filesystem::path& journal_path, int journal_fd) {
  const auto timeout = journal_lock_timeout();
  const auto start = Clock::now();
  const auto deadline = start + timeout;
  const auto waited = [&] { return wait_text(std::chrono::duration_cast<Milliseconds>(Clock::now() - start)); };
  const auto longer = fmt::format("or let writers wait longer: {}=SECONDS (now {})", kJournalLockTimeoutVariable,
                                  wait_text(timeout));

  // Step 1: this process's other threads, then journal.lock.
  const auto lock_path = journal_lock_path(journal_path);
  ProcessTurn& turn = journal_process_turn(lock_path);
  if (!turn.take_until(deadline)) {
    throw JournalError(fmt::format("waited {} for another thread of this process writing {} (or still waiting for "
                                   "its lock after giving up); {}",
                                   waited(), journal_path.string(), longer));
  }
  turn_.turn = &turn;
  lock_ = FileLock(open_lock_file(lock_path), lock_path, LockOwner::process);
  // Given up at the deadline, the helper still waiting for journal.lock keeps this process's turn
  // until it has the lock and has let it go, so that no other thread here is granted it meanwhile.
  if (!lock_.try_lock(LockMode::exclusive) &&
      !lock_.lock_until(LockMode::exclusive, deadline, [&turn] { turn.give_back(); })) {
    turn_.turn = nullptr;
    throw JournalError(fmt::format(
        "waited {} for the journal's writer lock {} ({}): only processes of the experiment's owner can hold it, "
        "so one of them is stuck (stopped, or blocked on a hung file system): find it with `fuser -v {}` on the "
        "nodes that run this experiment's trials and end it, {}",
        waited(), lock_path.string(), holder_after_giving_up(lock_path), lock_path.string(), longer));
  }

  // Step 2: the journal itself, for writers from before journal.lock. A write lock when nobody
  // else has one; else a read lock, which readers' read locks allow and an older writer's write
  // lock does not (so it also keeps older writers out); else an older writer is appending: wait.
  // A kernel without OFD locks refuses with EINVAL: then this step is skipped.
  journal_lock_ = FileLock(copy_of(journal_fd, journal_path), journal_path, LockOwner::description);
  const auto compatible = [&] {
    try {
      return journal_lock_.try_lock(LockMode::exclusive) || journal_lock_.try_lock(LockMode::shared);
    } catch (const SystemError& error) {
      if (error.error_number() != EINVAL) throw;
      return true;  // not held: nothing to release
    }
  };
  if (!poll_until(deadline, compatible)) {
    throw JournalError(fmt::format(
        "waited {} for the journal {}: a writer from before journal.lock (an older dlx-launch, still running "
        "through an upgrade) has it locked ({}); let it finish, end it if it is stuck, {}",
        waited(), journal_path.string(), journal_lock_.holder(LockMode::shared), longer));
  }
}

}  // namespace detail

}  // namespace dlx::searcher
