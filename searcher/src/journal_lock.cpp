// The journal writers' lock with a deadline (journal_lock.hpp; protocol in journal.hpp).
#include "journal_lock.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>

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
// for journal.lock (wait_for_write_lock below), which gives it back when it gets the lock.
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

// Waits between attempts: 0.2 ms doubling up to kMaxPause, each drawn from [half, whole] so that
// writers waiting on many nodes do not retry in step. Returns false, without sleeping, once the
// deadline has passed. The cap is low because waiters poll: the longest waiters poll least often,
// and with a 50 ms cap one of 4 writers asking back to back waited up to 0.35 s; on NFS each poll
// is one lock request to the server, which is why there is a cap at all.
constexpr std::chrono::microseconds kFirstPause{200};
constexpr std::chrono::microseconds kMaxPause{10'000};
class LockBackoff {
 public:
  explicit LockBackoff(Clock::time_point deadline)
      : deadline_(deadline),
        random_(static_cast<std::uint32_t>(::getpid()) ^
                static_cast<std::uint32_t>(Clock::now().time_since_epoch().count())) {}
  bool sleep() {
    const auto now = Clock::now();
    if (now >= deadline_) return false;
    const auto whole = next_.count();
    const auto drawn = std::chrono::microseconds(std::uniform_int_distribution<long>(whole / 2, whole)(random_));
    std::this_thread::sleep_for(std::min<Clock::duration>(drawn, deadline_ - now));
    next_ = std::min(next_ * 2, kMaxPause);
    return true;
  }

 private:
  Clock::time_point deadline_;
  std::chrono::microseconds next_ = kFirstPause;
  std::minstd_rand random_;
};

// Calls `attempt` until it returns true or the deadline passes (then once more, at the deadline).
template <class Attempt>
bool poll_lock_until(Clock::time_point deadline, Attempt attempt) {
  LockBackoff backoff(deadline);
  while (!attempt()) {
    if (!backoff.sleep()) return attempt();
  }
  return true;
}

[[noreturn]] void throw_journal_lock_error(const std::filesystem::path& path, int error) {
  if (error == ENOLCK) {
    throw SystemError(fmt::format("cannot lock {} (the file system refuses fcntl locks, which dlx needs across "
                                  "nodes: on NFS, lockd/statd must run on the clients and the mount must not "
                                  "use `nolock`; on Lustre, mount with `-o flock`)",
                                  path.string()),
                      error);
  }
  throw SystemError(fmt::format("cannot lock {}", path.string()), error);
}

// One non-blocking attempt at a whole-file lock; false when another holder refuses it.
// `command` is F_SETLK (POSIX: journal.lock) or F_OFD_SETLK (the journal's compatibility lock).
// Returns -1 instead when the kernel does not know the command (OFD locks before Linux 3.15).
int try_fcntl_lock(int fd, int command, short type, const std::filesystem::path& path) {
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  while (::fcntl(fd, command, &lock) != 0) {
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EACCES) return 0;
    if (errno == EINVAL && command == F_OFD_SETLK) return -1;
    throw_journal_lock_error(path, errno);
  }
  return 1;
}

// Who holds a lock that conflicts with `type` on `fd`, for the message: F_GETLK for journal.lock,
// F_OFD_GETLK for the journal (it reports the pid of a POSIX lock's holder, which is what an older
// writer takes; -1 for another open file description's lock).
std::string lock_holder_text(int fd, int command, short type) {
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  if (::fcntl(fd, command, &lock) != 0) return "its holder could not be asked";
  if (lock.l_type == F_UNLCK) return "released at the last moment; try again";
  if (lock.l_pid <= 0) return "held by a process the file system does not name";
  return fmt::format("held by process {}; on a shared file system that process may run on another node", lock.l_pid);
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

// What a writer that has waited for journal.lock since `lock_fd` was refused does: F_SETLKW, which
// the kernel (or the NFS client) ends as soon as the lock is free, in fair competition with the
// other waiters, on a helper thread, while this thread waits for it until `deadline`. (Polling
// instead, with backoff, made the longest waiters poll least often: one of 4 writers asking back
// to back waited up to 4.3 s on a slow disk, against 0.07 s blocked.) Returns true with the lock
// held through `lock_fd`. At the deadline it returns false, and the helper keeps `lock_fd` and
// `*turn` (set to null here): once it has the lock it releases it at once (closing the
// descriptor) and gives the turn back, so this process's next writer cannot be granted the lock
// by a thread that is not using it. A process that cannot start a thread polls.
bool wait_for_write_lock(UniqueFd& lock_fd, ProcessTurn*& turn, Clock::time_point deadline,
                         const std::filesystem::path& lock_path) {
  struct Pending {
    std::mutex mutex;
    std::condition_variable finished;
    bool done = false;
    bool abandoned = false;
    int error = 0;
    UniqueFd fd;
    ProcessTurn* turn = nullptr;
  };
  auto pending = std::make_shared<Pending>();
  pending->fd = std::move(lock_fd);
  pending->turn = turn;
  const auto wait = [pending] {
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    int error = 0;
    while (::fcntl(pending->fd.get(), F_SETLKW, &lock) != 0) {
      if (errno != EINTR) {
        error = errno;
        break;
      }
    }
    std::unique_lock<std::mutex> guard(pending->mutex);
    if (pending->abandoned) {
      pending->fd.reset();  // releases the lock, if it got it
      ProcessTurn* given = pending->turn;
      guard.unlock();
      given->give_back();
      return;
    }
    pending->error = error;
    pending->done = true;
    guard.unlock();
    pending->finished.notify_one();
  };
  try {
    // With every signal blocked, so that the process's signals (dlx-launch's requeue signal, a
    // trainer's own) go to the threads that handle them, never to this one.
    sigset_t all, previous;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &previous);
    struct RestoreMask {
      sigset_t mask;
      ~RestoreMask() { ::pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
    } restore{previous};
    std::thread(wait).detach();
  } catch (const std::system_error&) {
    lock_fd = std::move(pending->fd);
    const int fd = lock_fd.get();
    return poll_lock_until(deadline, [&] { return try_fcntl_lock(fd, F_SETLK, F_WRLCK, lock_path) == 1; });
  }
  std::unique_lock<std::mutex> guard(pending->mutex);
  if (!pending->finished.wait_until(guard, deadline, [&] { return pending->done; })) {
    pending->abandoned = true;
    turn = nullptr;
    return false;
  }
  lock_fd = std::move(pending->fd);
  if (pending->error != 0) throw_journal_lock_error(lock_path, pending->error);
  return true;
}

// The holder of journal.lock, asked through a descriptor of its own after this process gave up
// waiting (the one it waited with belongs to the helper thread now). F_GETLK ignores this
// process's own locks, so the helper getting the lock meanwhile reads as "released".
std::string holder_after_giving_up(const std::filesystem::path& lock_path) {
  try {
    const UniqueFd fd = open_lock_file(lock_path);
    return lock_holder_text(fd.get(), F_GETLK, F_WRLCK);
  } catch (const Error&) {
    return "its holder could not be asked";
  }
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

JournalWriterLock::JournalWriterLock(const std::filesystem::path& journal_path, int journal_fd)
    : journal_fd_(journal_fd) {
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
  lock_fd_ = open_lock_file(lock_path);
  if (try_fcntl_lock(lock_fd_.get(), F_SETLK, F_WRLCK, lock_path) != 1 &&
      !wait_for_write_lock(lock_fd_, turn_.turn, deadline, lock_path)) {
    throw JournalError(fmt::format(
        "waited {} for the journal's writer lock {} ({}): only processes of the experiment's owner can hold it, "
        "so one of them is stuck (stopped, or blocked on a hung file system): find it with `fuser -v {}` on the "
        "nodes that run this experiment's trials and end it, {}",
        waited(), lock_path.string(), holder_after_giving_up(lock_path), lock_path.string(), longer));
  }

  // Step 2: the journal itself, for writers from before journal.lock. A write lock when nobody
  // else has one; else a read lock, which readers' read locks allow and an older writer's write
  // lock does not (so it also keeps older writers out); else an older writer is appending: wait.
  bool unsupported = false;
  const auto compatible = [&] {
    for (const short type : {short{F_WRLCK}, short{F_RDLCK}}) {
      const int got = try_fcntl_lock(journal_fd_, F_OFD_SETLK, type, journal_path);
      if (got == -1) unsupported = true;
      if (got != 0) return true;
    }
    return false;
  };
  if (!poll_lock_until(deadline, compatible)) {
    throw JournalError(fmt::format(
        "waited {} for the journal {}: a writer from before journal.lock (an older dlx-launch, still running "
        "through an upgrade) has it locked ({}); let it finish, end it if it is stuck, {}",
        waited(), journal_path.string(), lock_holder_text(journal_fd_, F_OFD_GETLK, F_RDLCK), longer));
  }
  journal_locked_ = !unsupported;
}

JournalWriterLock::~JournalWriterLock() {
  if (!journal_locked_) return;
  struct flock lock {};
  lock.l_type = F_UNLCK;
  lock.l_whence = SEEK_SET;
  ::fcntl(journal_fd_, F_OFD_SETLK, &lock);
}

}  // namespace detail

}  // namespace dlx::searcher
