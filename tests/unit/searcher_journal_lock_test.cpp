// SPDX-License-Identifier: Apache-2.0
// The journal's locking and files (journal.hpp, "Files", "Append protocol", "Reading"): a process
// holding a read lock on the journal (a group member can) delays no writer; readers take no lock;
// writers exclude each other through journal.lock, wait for it only until
// DLX_JOURNAL_LOCK_TIMEOUT and then name the holder; an older writer locking the journal itself is
// waited for; the files get their modes whatever the umask; links, FIFOs, directories and other
// users' files under the protocol's names are refused at once with a message. Real files, real
// processes (fork), and, run as root, two real users (uids set in forked children).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "dlx/config/parse.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/searcher/journal.hpp"
#include "dlx/searcher/journal_snapshot.hpp"
#include "forked_lock_holder.hpp"
#include "run_in_child.hpp"
#include "searcher_temp_dir.hpp"

namespace fs = std::filesystem;
using dlx::searcher::Journal;
using dlx::searcher::JournalError;
using dlx::testing::Credentials;
using dlx::testing::run_in_child;
using dlx::testing::slurp;
using dlx::testing::spit;
using dlx::testing::TempDir;

namespace {

nlohmann::json event(const std::string& id, std::size_t padding = 0) {
  return {{"id", id}, {"type", "test"}, {"padding", std::string(padding, 'x')}};
}

// Sets an environment variable for the scope of a test (DLX_JOURNAL_LOCK_TIMEOUT).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A forked process that opens `path` with `flags` and holds the POSIX fcntl lock `type` on it (as
// an older dlx, or any user's program, takes it), as `who` when given, until release().
struct LockHolder : dlx::testing::ForkedLockHolder {
  LockHolder(const fs::path& path, int flags, short type, std::optional<Credentials> who = std::nullopt)
      : ForkedLockHolder(path, flags, type, [who] { return dlx::testing::become(who); }) {}
};

unsigned mode_of(const fs::path& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 ? static_cast<unsigned>(info.st_mode & 07777) : 0u;
}

std::string what_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const JournalError& error) {
    return error.what();
  }
  return "(nothing thrown)";
}

}  // namespace

TEST_CASE("journal lock: a process holding a read lock on the journal does not delay a writer",
          "[journal][lock]") {
  TempDir dir;
  Journal journal(dir.journal());
  journal.append(event("a"));
  // The attack of issue 17 (finding 9): F_RDLCK on the journal, held for as long as she likes.
  // Before, every writer waited in F_SETLKW until she let go; the deadline only guards a hang.
  LockHolder reader(dir.journal(), O_RDONLY, F_RDLCK);
  REQUIRE(reader.locked());
  const ScopedEnv timeout("DLX_JOURNAL_LOCK_TIMEOUT", "60");
  journal.append(event("b"));
  const auto scan = journal.read();
  REQUIRE(scan.records.size() == 2);
  CHECK(scan.records[1].event["id"] == "b");
}

TEST_CASE("journal lock: readers take no lock, so a writer holding every lock does not block them",
          "[journal][lock]") {
  TempDir dir;
  Journal(dir.journal()).append(event("a"));
  Journal(dir.journal()).append(event("b"));
  LockHolder journal_lock(dir.journal(), O_RDWR, F_WRLCK);
  LockHolder writers_lock(dir.path / "journal.lock", O_RDWR, F_WRLCK);
  REQUIRE(journal_lock.locked());
  REQUIRE(writers_lock.locked());
  const auto result = run_in_child([&] {
    const Journal journal(dir.journal());
    const auto scan = journal.read();
    const auto bytes = journal.read_bytes(0);
    return fmt::format("records {} bytes {}", scan.records.size(), bytes.bytes.size());
  });
  CHECK(result.status == 0);  // 128 + SIGALRM: a reader waited for a lock
  CHECK(result.text == fmt::format("records 2 bytes {}", fs::file_size(dir.journal())));
}

TEST_CASE("journal lock: a writer holding journal.lock makes another give up at the deadline, naming it",
          "[journal][lock]") {
  TempDir dir;
  Journal journal(dir.journal());
  journal.append(event("a"));
  const auto before = slurp(dir.journal());
  LockHolder other(dir.path / "journal.lock", O_RDWR, F_WRLCK);
  REQUIRE(other.locked());
  const ScopedEnv timeout("DLX_JOURNAL_LOCK_TIMEOUT", "0.3");
  const auto message = what_of([&] { journal.append(event("b")); });
  CHECK_THAT(message, Catch::Contains("waited 0.3") &&
                          Catch::Contains("for the journal's writer lock " + (dir.path / "journal.lock").string()) &&
                          Catch::Contains(fmt::format("held by process {}; on a shared file system that process may "
                                                      "run on another node", other.pid())) &&
                          Catch::Contains("fuser -v") && Catch::Contains("DLX_JOURNAL_LOCK_TIMEOUT=SECONDS (now 0.3 s)"));
  CHECK(slurp(dir.journal()) == before);
  other.release();
  journal.append(event("b"));
  CHECK(journal.read().records.size() == 2);
}

TEST_CASE("journal lock: a writer from before journal.lock, locking the journal itself, is waited for",
          "[journal][lock]") {
  TempDir dir;
  Journal journal(dir.journal());
  journal.append(event("a"));
  const auto size = fs::file_size(dir.journal());

  SECTION("until it lets go") {
    // The older writer holds F_WRLCK on the journal until it sees the new writer waiting (holding
    // journal.lock, which it cannot take then), then checks that nothing was appended meanwhile.
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    const pid_t older = ::fork();
    REQUIRE(older >= 0);
    if (older == 0) {
      ::close(ready[0]);
      ::alarm(60);
      const int fd = ::open(dir.journal().c_str(), O_RDWR);
      struct flock lock {};
      lock.l_type = F_WRLCK;
      lock.l_whence = SEEK_SET;
      const char ok = fd >= 0 && ::fcntl(fd, F_SETLK, &lock) == 0 ? 1 : 0;
      if (::write(ready[1], &ok, 1) != 1 || !ok) ::_exit(2);
      for (;;) {  // until the new writer holds journal.lock
        const int probe = ::open((dir.path / "journal.lock").c_str(), O_RDWR);
        struct flock test {};
        test.l_type = F_WRLCK;
        test.l_whence = SEEK_SET;
        const bool free = probe < 0 || ::fcntl(probe, F_SETLK, &test) == 0;
        if (probe >= 0) ::close(probe);
        if (!free) break;
        ::usleep(1000);
      }
      ::usleep(200 * 1000);
      struct stat info {};
      ::fstat(fd, &info);
      ::_exit(static_cast<std::uintmax_t>(info.st_size) == size ? 0 : 1);
    }
    ::close(ready[1]);
    char ok = 0;
    REQUIRE(::read(ready[0], &ok, 1) == 1);
    REQUIRE(ok == 1);
    const ScopedEnv timeout("DLX_JOURNAL_LOCK_TIMEOUT", "60");
    journal.append(event("b"));
    int status = 0;
    ::waitpid(older, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);  // 1: the new writer appended while the older one held the journal
    CHECK(journal.read().records.size() == 2);
  }
  SECTION("until the deadline, naming it") {
    LockHolder older(dir.journal(), O_RDWR, F_WRLCK);
    REQUIRE(older.locked());
    const ScopedEnv timeout("DLX_JOURNAL_LOCK_TIMEOUT", "0.2");
    const auto message = what_of([&] { journal.append(event("b")); });
    CHECK_THAT(message, Catch::Contains("for the journal " + dir.journal().string()) &&
                            Catch::Contains("a writer from before journal.lock") &&
                            Catch::Contains(fmt::format("held by process {}", older.pid())));
    CHECK(fs::file_size(dir.journal()) == size);
  }
}

TEST_CASE("journal lock: threads of one process, each with its own Journal, take turns", "[journal][lock]") {
  TempDir dir;
  constexpr int kThreads = 4, kEvents = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Journal journal(dir.journal());
      for (int k = 0; k < kEvents; ++k) journal.append(event(fmt::format("t{}-{}", t, k), static_cast<std::size_t>(k * 37)));
    });
  }
  for (auto& thread : threads) thread.join();
  const auto scan = Journal(dir.journal()).read();
  CHECK(scan.corruption.empty());
  CHECK_FALSE(scan.torn_tail);
  CHECK(scan.duplicates == 0);
  CHECK(scan.records.size() == kThreads * kEvents);
}

TEST_CASE("journal lock: readers racing an appender see a prefix of whole records, never corruption",
          "[journal][lock]") {
  TempDir dir;
  constexpr int kEvents = 300;
  const pid_t writer = ::fork();
  REQUIRE(writer >= 0);
  if (writer == 0) {
    Journal journal(dir.journal());
    // Records from a few bytes to 3 pages, so that appends cross page boundaries.
    for (int k = 0; k < kEvents; ++k) journal.append(event(fmt::format("e{}", k), static_cast<std::size_t>((k * 911) % 12000)));
    ::_exit(0);
  }
  std::size_t reads = 0, last = 0;
  bool in_order = true, clean = true;
  for (int status = 0; ::waitpid(writer, &status, WNOHANG) == 0; ++reads) {
    const Journal journal(dir.journal());
    const auto scan = reads % 2 ? journal.read() : dlx::searcher::scan_journal(journal.read_bytes(0).bytes);
    clean = clean && scan.corruption.empty();
    for (std::size_t k = 0; k < scan.records.size(); ++k) in_order = in_order && scan.records[k].event["id"] == fmt::format("e{}", k);
    in_order = in_order && scan.records.size() >= last;
    last = scan.records.size();
  }
  INFO(reads << " reads");
  CHECK(clean);
  CHECK(in_order);
  CHECK(Journal(dir.journal()).read().records.size() == kEvents);
}

TEST_CASE("journal files: modes are explicit whatever the umask", "[journal][lock]") {
  TempDir dir;
  const mode_t mask = GENERATE(mode_t{0}, mode_t{002}, mode_t{077});
  INFO(fmt::format("umask {:03o}", mask));
  const auto result = run_in_child([&] {
    ::umask(mask);
    const auto experiment = dlx::config::parse_experiment(
        "name: s\nentrypoint: x\nseed: 7\nsearcher: {name: random, metric: loss, max_trials: 40, max_length: "
        "{batches: 4}}\nhyperparameters:\n  x: {type: double, minval: 0, maxval: 1}\n",
        "s.yaml");
    dlx::searcher::Coordinator coordinator(experiment, dir.journal());
    coordinator.snapshot_policy({.min_records = 2, .fraction = 1});
    for (int ticket = 0; ticket < 4; ++ticket) coordinator.request_work(ticket);
    return fmt::format("journal {:o} journal.lock {:o} journal.snapshot.lock {:o}", mode_of(dir.journal()),
                       mode_of(dir.path / "journal.lock"), mode_of(dir.path / "journal.snapshot.lock"));
  });
  CHECK(result.status == 0);
  CHECK(result.text == "journal 640 journal.lock 600 journal.snapshot.lock 600");
}

TEST_CASE("journal files: an existing journal's mode is cut to 0640 at most, lock files' to 0600",
          "[journal][lock]") {
  TempDir dir;
  Journal journal(dir.journal());
  journal.append(event("a"));
  fs::permissions(dir.journal(), fs::perms(0664));  // an older dlx under umask 002
  fs::permissions(dir.path / "journal.lock", fs::perms(0644));
  journal.append(event("b"));
  CHECK(mode_of(dir.journal()) == 0640);
  CHECK(mode_of(dir.path / "journal.lock") == 0600);
  fs::permissions(dir.journal(), fs::perms(0600));  // the owner's choice: never widened
  journal.append(event("c"));
  CHECK(mode_of(dir.journal()) == 0600);
}

TEST_CASE("journal files: links, FIFOs and directories under the protocol's names are refused at once",
          "[journal][lock]") {
  TempDir dir;
  const fs::path victim = dir.path / "victim";
  spit(victim, "not a journal");
  fs::permissions(victim, fs::perms(0644));
  const auto refused = [&](const std::string& expected) {
    const auto result = run_in_child([&] {
      const Journal journal(dir.journal());
      std::string out;
      out += what_of([&] { Journal(dir.journal()).append(event("a")); }) + "\n";
      out += what_of([&] { (void)journal.read(); }) + "\n";
      out += what_of([&] { (void)journal.read_bytes(0); }) + "\n";
      return out;
    });
    CHECK(result.status == 0);  // 128 + SIGALRM: an open blocked
    CHECK_THAT(result.text, Catch::Contains(expected));
    return result.text;
  };
  SECTION("the journal is a symbolic link") {
    fs::create_symlink(victim, dir.journal());
    const auto text = refused(dir.journal().string() + " is a symbolic link: dlx does not follow links");
    CHECK(text.find("(nothing thrown)") == std::string::npos);
    CHECK(slurp(victim) == "not a journal");
    CHECK(mode_of(victim) == 0644);
  }
  SECTION("the journal is a FIFO") {
    REQUIRE(::mkfifo(dir.journal().c_str(), 0644) == 0);
    const auto text = refused(dir.journal().string() + " is a FIFO, not a regular file");
    CHECK(text.find("(nothing thrown)") == std::string::npos);
  }
  SECTION("the journal is a directory") {
    fs::create_directory(dir.journal());
    refused(dir.journal().string() + " is a directory");
  }
  SECTION("journal.lock is a symbolic link") {
    fs::create_symlink(victim, dir.path / "journal.lock");
    refused((dir.path / "journal.lock").string() + " is a symbolic link");
    CHECK(mode_of(victim) == 0644);  // not chmod-ed through the link
  }
  SECTION("journal.lock is a FIFO") {
    REQUIRE(::mkfifo((dir.path / "journal.lock").c_str(), 0600) == 0);
    refused((dir.path / "journal.lock").string() + " is a FIFO, not a regular file");
  }
  SECTION("journal.snapshot is a FIFO: not a snapshot, and nothing blocks") {
    REQUIRE(::mkfifo(dlx::searcher::journal_snapshot_path(dir.journal()).c_str(), 0600) == 0);
    const auto result = run_in_child([&] {
      return dlx::searcher::peek_journal_snapshot(dlx::searcher::journal_snapshot_path(dir.journal())) ? "a snapshot"
                                                                                                        : "none";
    });
    CHECK(result.status == 0);
    CHECK(result.text == "none");
  }
}

TEST_CASE("journal files: a writer refuses a journal or lock file of another user", "[journal][lock]") {
  if (::geteuid() != 0) {
    WARN("skipped: needs root to give a file to another user");
    return;
  }
  TempDir dir;
  Journal journal(dir.journal());
  journal.append(event("a"));
  const auto lock = dir.path / "journal.lock";
  SECTION("the journal") {
    REQUIRE(::chown(dir.journal().c_str(), 64011, 64011) == 0);
    CHECK_THAT(what_of([&] { journal.append(event("b")); }),
               Catch::Contains(dir.journal().string() + " belongs to uid 64011, not to this process's user (uid 0") &&
                   Catch::Contains("run this as the owner"));
  }
  SECTION("journal.lock") {
    REQUIRE(::chown(lock.c_str(), 64011, 64011) == 0);
    CHECK_THAT(what_of([&] { journal.append(event("b")); }),
               Catch::Contains(lock.string() + " belongs to uid 64011"));
  }
  CHECK(journal.read().records.size() == 1);
}

TEST_CASE("journal lock: as two users, a group member can read the journal but can stall no writer",
          "[journal][lock]") {
  if (::geteuid() != 0) {
    WARN("skipped: needs root to act as two users");
    return;
  }
  // Uids with no account: the kernel needs none. The experiment directory as dlx makes it: the
  // owner's, 0750, in the owner's group, which the member is in.
  const Credentials owner{64001, 64000}, member{64002, 64000};
  TempDir dir;
  fs::permissions(dir.path, fs::perms(0755));
  const fs::path experiment = dir.path / "exp";
  fs::create_directory(experiment);
  REQUIRE(::chown(experiment.c_str(), owner.uid, owner.gid) == 0);
  fs::permissions(experiment, fs::perms(0750));
  const fs::path journal = experiment / "journal";
  const fs::path snapshot_lock = experiment / "journal.snapshot.lock";
  const auto as_owner = [&](const std::string& id) {
    return run_in_child(
        [&] {
          const ScopedEnv timeout("DLX_JOURNAL_LOCK_TIMEOUT", "60");
          Journal(journal).append(event(id));
          // journal.snapshot.lock as a snapshot writer makes it (the coordinator's snapshot path).
          const int fd = ::open(snapshot_lock.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
          if (fd >= 0) ::close(fd);
          return std::string("appended");
        },
        90, owner);
  };
  auto first = as_owner("a");
  REQUIRE(first.text == "appended");
  CHECK(fmt::format("{:o} {:o}", mode_of(journal), mode_of(experiment / "journal.lock")) == "640 600");

  // The member: reads the journal (the group may), holds F_RDLCK on it, cannot open either lock file.
  const auto probe = run_in_child(
      [&] {
        const auto scan = Journal(journal).read();
        const bool lock_open = ::open((experiment / "journal.lock").c_str(), O_RDONLY) >= 0;
        const int lock_errno = errno;
        const bool snapshot_lock_open = ::open(snapshot_lock.c_str(), O_RDONLY) >= 0;
        const int snapshot_errno = errno;
        return fmt::format("records {} journal.lock {} journal.snapshot.lock {}", scan.records.size(),
                           lock_open ? "opened" : lock_errno == EACCES ? "EACCES" : "other error",
                           snapshot_lock_open ? "opened" : snapshot_errno == EACCES ? "EACCES" : "other error");
      },
      60, member);
  CHECK(probe.text == "records 1 journal.lock EACCES journal.snapshot.lock EACCES");
  LockHolder stall(journal, O_RDONLY, F_RDLCK, member);
  REQUIRE(stall.locked());
  const auto second = as_owner("b");
  CHECK(second.status == 0);
  CHECK(second.text == "appended");
  stall.release();
  CHECK(Journal(journal).read().records.size() == 2);
}

TEST_CASE("journal: a writer never cuts the journal at an offset that is not a record boundary",
          "[journal][lock]") {
  TempDir dir;
  Journal journal(dir.journal());
  for (auto id : {"a", "b", "c"}) journal.append(event(id, 100));
  const auto before = slurp(dir.journal());
  const auto last = journal.read().records.back().offset;
  // As if this process had read up to the middle of the last record (a record it saw was lost
  // before it was durable, and another was appended in its place).
  const auto message = what_of([&] { journal.transact(last + 5, [](const auto&) { return std::vector<nlohmann::json>{event("d")}; }); });
  CHECK_THAT(message, Catch::Contains(fmt::format("this process read the journal up to offset {}, which is no longer "
                                                  "the end of a valid record", last + 5)) &&
                          Catch::Contains("not appending"));
  CHECK(slurp(dir.journal()) == before);
  // At a boundary, a torn tail is cut as before.
  spit(dir.journal(), before + "DLXJ\x05");
  CHECK(journal.transact(before.size(), [](const auto&) { return std::vector<nlohmann::json>{event("d")}; }) >
        before.size());
  CHECK(journal.read().records.size() == 4);
}

TEST_CASE("journal lock: DLX_JOURNAL_LOCK_TIMEOUT that is not a number of seconds is refused", "[journal][lock]") {
  TempDir dir;
  Journal journal(dir.journal());
  const std::string value = GENERATE("abc", "-1", "1e9", "5s", "nan");
  const ScopedEnv timeout("DLX_JOURNAL_LOCK_TIMEOUT", value);
  CHECK_THAT(what_of([&] { journal.append(event("a")); }),
             Catch::Contains("DLX_JOURNAL_LOCK_TIMEOUT=" + value + ": not a number of seconds from 0 to 604800") &&
                 Catch::Contains("unset it for the default, 120 s"));
}
