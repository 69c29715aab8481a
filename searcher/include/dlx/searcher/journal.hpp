// SPDX-License-Identifier: Apache-2.0
#pragma once
// The experiment journal: the searcher's durable event log on shared storage, with no daemon.
//
// File format (little-endian), one record after another:
//   u32 magic "DLXJ" | u32 payload length | u32 CRC-32C of the payload | payload (JSON, UTF-8)
//
// Files, beside each other in the experiment directory, each opened with O_NOFOLLOW (a symbolic
// link is refused: whoever can change it would choose what dlx reads and writes) and O_NONBLOCK
// (a FIFO under the name cannot block the open), and refused unless it is a regular file:
//   journal        the records. Created 0640 whatever the umask (the group reads experiments);
//                  a writer cuts an existing one's mode to at most 0640 (an older dlx under umask
//                  002 left 0664: group-writable) and never widens a stricter one.
//   journal.lock   empty: the writers' lock (<journal>.lock). Created 0600, cut to at most 0600:
//                  only the owner can open it, so only the owner's processes can lock it.
//   (journal.snapshot and journal.snapshot.lock: journal_snapshot.hpp.)
// A writer refuses a journal or lock file that belongs to another user: only the experiment's
// owner writes its journal.
//
// Why a lock file apart from the journal: an fcntl read lock needs only a read-only descriptor.
// When writers locked the journal itself (F_SETLKW, waiting for as long as it took) and readers
// took read locks, any group member could open the journal read-only, hold F_RDLCK, and stall
// every writer, every trial's dlx-launch, for as long as she liked. Now readers take no lock, and
// writers lock a file that nobody else can open.
//
// Append protocol (every writer, on any node). One deadline covers every wait in steps 1 and 2:
// DLX_JOURNAL_LOCK_TIMEOUT seconds (0 to 604800, fractions allowed), default 120.
//   1. this process's turn for the journal first (fcntl locks belong to the process, which a
//      second thread would share), then an exclusive POSIX fcntl lock (F_WRLCK) on journal.lock:
//      tried without blocking (F_SETLK); when refused, waited for with F_SETLKW on a helper
//      thread while the writer waits for that thread until the deadline (a blocked waiter is
//      woken as soon as the lock is free; polling with backoff let the longest waiters lose,
//      docs/benchmarks.md). Past the deadline the writer fails with a JournalError that names the
//      file, how long it waited and the holder's pid (F_GETLK; the process may run on another
//      node, and some file systems do not say: then no pid), and what to do; the helper keeps
//      this process's turn until it has the lock, and releases both at once. Only the owner's
//      processes can hold journal.lock, so a long wait means one of them is stuck (stopped, or
//      on a hung file system).
//   2. compatibility with writers from before journal.lock (an older dlx-launch still running
//      through an upgrade takes F_WRLCK on the journal itself, waiting, and knows nothing of
//      journal.lock): lock the journal too, without blocking, with an open-file-description lock
//      (F_OFD_SETLK: no close of another descriptor of the journal in this process, such as a
//      reader's, drops it; OFD and POSIX locks conflict with each other): F_WRLCK when granted;
//      else F_RDLCK, granted when only read locks are there (older readers, or a group member's)
//      and still refused to an older writer, which needs F_WRLCK: readers tolerate appends (see
//      Reading), so going on beside read locks is safe. Refused both, an older writer holds
//      F_WRLCK: retry (0.2 ms, doubling to 10 ms, with jitter) to the same deadline (its message
//      names that pid). A kernel without OFD locks (before Linux 3.15) skips this step.
//   3. scan the records; if the last record is incomplete or fails its checksum and nothing valid
//      follows it, it is a torn tail left by a writer killed mid-append: truncate it away (its
//      writer was never told the append succeeded). An invalid record followed by valid ones is
//      corruption, not a torn write: refuse to append and report the offset;
//   4. write the new record at the end, fdatasync, release the locks. The append returns only
//      after the record is durable, so an acknowledged event is never lost.
// A writer killed after step 4's write but before the acknowledgement leaves a complete record
// its caller may post again: every event carries an `id`, and readers count each id once.
//
// Reading (Journal::read, read_bytes, and through them the snapshot readers, `dlx status`,
// `dlx replay`, `dlx ckpt`) takes no lock, so no reader ever delays a writer. It is safe beside
// a writer appending meanwhile because a record counts only when it is complete and its
// checksum matches, and the bytes below the valid end never change (appends only; torn-tail
// recovery cuts only invalid bytes after the last valid record). A reader sees a prefix of the
// valid records and perhaps part of an append in progress after it, which, incomplete or not
// matching its checksum, it treats as a torn tail: not written yet (only a writer, holding the
// lock, truncates a torn tail). What readers gave up with the lock:
//   - a complete record a reader sees may not be durable yet (its writer is between its write and
//     its fdatasync). A process killed there loses nothing (the kernel keeps the page); losing it
//     takes a crash of its node or storage server at that instant. A writer that catches up from
//     such a read and then finds, under the lock, that the offset it read up to is no longer a
//     record boundary refuses to cut the journal there (transact).
//   - on NFS, the pages of an append in progress can reach the server, and so another client, out
//     of order: a reader may see a hole inside an append and a complete record after it, which
//     looks like corruption. Journal::read looks again twice (100 and 200 ms later) before it
//     reports corruption. catch_up stops before it and reports it: the coordinator then reads on
//     under the lock, where the question does not arise; `dlx ckpt gc` refuses that once.
//   - on NFS a reader sees what was written before its open (close-to-open consistency, the
//     default: do not mount with `nocto`); the locks used to guarantee it. Lustre is coherent.
// What it relies on: fcntl locks that work across nodes (NFS: lockd/statd or NFSv4, not mounted
// `nolock`; Lustre: mounted `-o flock`), as before.
//
// Transactions: transact() runs steps 1-4 with a decision in the middle: it hands the caller the
// records after an offset the caller already knows (the file is append-only below its valid end,
// so a prefix once read never changes), and appends whatever the caller returns, all under the one
// writers' lock. That is how a trial reads the searcher's state and records its decision with no
// other writer in between, on any node.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlx/common/error.hpp"

namespace dlx::searcher {

class JournalError : public Error {
 public:
  using Error::Error;
};

struct JournalRecord {
  std::uint64_t offset = 0;
  nlohmann::json event;
};

// Names one record of a journal: where it starts, its size (header + payload) and the CRC-32C in
// its header. A journal snapshot names the last record it covers this way (journal_snapshot.hpp).
struct RecordStamp {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint32_t crc = 0;
  std::uint64_t end() const { return offset + size; }
  friend bool operator==(const RecordStamp&, const RecordStamp&) = default;
};

struct JournalScan {
  std::vector<JournalRecord> records;  // valid records, in file order, duplicates of an id dropped
  std::uint64_t valid_end = 0;         // where the valid prefix ends
  std::uint64_t file_size = 0;
  std::size_t duplicates = 0;          // records whose id was seen before
  bool torn_tail = false;              // bytes after valid_end, from a writer killed mid-append
  std::string corruption;              // non-empty: an invalid record with valid ones after it
  std::optional<RecordStamp> last;     // the last valid record scanned (a duplicate or not)
  std::uint64_t checksummed_bytes = 0;  // bytes whose CRC the scan computed: at most about twice
                                       // what it read, whatever the bytes (journal_format.cpp)
  std::uint64_t scanned() const { return records.size() + duplicates; }  // valid records
};

// Bytes of a journal, read with no lock (Journal::read_bytes).
struct JournalBytes {
  std::uint64_t from = 0;       // the file offset of bytes[0]
  std::uint64_t file_size = 0;  // 0 for a missing file
  std::string bytes;            // from `from` to the end ("" when the file is not that long)
};

class Journal {
 public:
  explicit Journal(std::filesystem::path path) : path_(std::move(path)) {}

  // Appends `event`, which must be an object with a string "id". Durable on return. Throws
  // JournalError when the lock is not had within DLX_JOURNAL_LOCK_TIMEOUT (step 1) and for a
  // journal or lock file that is a link, not a regular file, or another user's.
  void append(const nlohmann::json& event);

  // Every valid record, read with no lock (Reading, above). A missing file reads as empty. Throws
  // JournalError for a symbolic link or anything but a regular file under the journal's name.
  JournalScan read() const;
  // The raw bytes from `from` to the end of the file, read with no lock: an append in progress
  // may show as a torn tail after the valid records (Reading, above). Never truncates a torn
  // tail: only a writer does that, under the lock.
  JournalBytes read_bytes(std::uint64_t from) const;

  // Under the writers' lock: scans the records from `from` (0, or a valid_end an earlier scan of
  // this journal returned), calls `decide` with them (offsets and valid_end are absolute), then
  // appends the events it returns (each an object with a string "id") and makes them durable.
  // Returns the new valid end. `decide` may throw: nothing is appended then.
  // `committed`, when given, runs after the appended events (if any) are durable and before the
  // lock is released, with the new valid end: the place for work that must see every committed
  // event and no other writer, such as rewriting experiment.h5. Its exceptions propagate, but the
  // events are committed by then.
  using Decide = std::function<std::vector<nlohmann::json>(const JournalScan& tail)>;
  using Committed = std::function<void(std::uint64_t valid_end)>;
  std::uint64_t transact(std::uint64_t from, const Decide& decide, const Committed& committed = {});

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

// The writers' lock file of the journal at `journal_path`: "<journal>.lock" beside it.
std::filesystem::path journal_lock_path(const std::filesystem::path& journal_path);

// Pure: records from the bytes of a journal file (exposed for tests and tools). `base` is the
// file offset of bytes[0]: offsets, valid_end and file_size come out absolute.
JournalScan scan_journal(const std::string& bytes, std::uint64_t base = 0);

// The bytes of one record (header + payload).
std::string encode_journal_record(const nlohmann::json& event);

// The stamp of the valid record that starts at bytes[at] (`base`: the file offset of bytes[0]),
// or nothing when no valid record starts there.
std::optional<RecordStamp> stamp_journal_record(const std::string& bytes, std::size_t at, std::uint64_t base = 0);

}  // namespace dlx::searcher
