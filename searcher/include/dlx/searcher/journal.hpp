#pragma once
// The experiment journal: the searcher's durable event log on shared storage, with no daemon.
//
// File format (little-endian), one record after another:
//   u32 magic "DLXJ" | u32 payload length | u32 CRC-32C of the payload | payload (JSON, UTF-8)
//
// Append protocol (every writer, on any node):
//   1. take an exclusive fcntl lock on the whole file (POSIX locks work across nodes on NFS and
//      Lustre); a process-local mutex orders the threads of one process;
//   2. scan the records; if the last record is incomplete or fails its checksum and nothing valid
//      follows it, it is a torn tail left by a writer killed mid-append: truncate it away (its
//      writer was never told the append succeeded). An invalid record followed by valid ones is
//      corruption, not a torn write: refuse to append and report the offset;
//   3. write the new record at the end, fdatasync, release the lock. The append returns only
//      after the record is durable, so an acknowledged event is never lost.
// A writer killed after step 3's write but before the acknowledgement leaves a complete record
// its caller may post again: every event carries an `id`, and readers count each id once.
// Readers take a shared lock, so they never see a record being written.
//
// Transactions: transact() runs steps 1-3 with a decision in the middle: it hands the caller the
// records after an offset the caller already knows (the file is append-only below its valid end,
// so a prefix once read never changes), and appends whatever the caller returns, all under the one
// exclusive lock. That is how a trial reads the searcher's state and records its decision with no
// other writer in between, on any node.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
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

// Bytes of a journal read under its shared lock (Journal::read_bytes).
struct JournalBytes {
  std::uint64_t from = 0;       // the file offset of bytes[0]
  std::uint64_t file_size = 0;  // 0 for a missing file
  std::string bytes;            // from `from` to the end ("" when the file is not that long)
};

class Journal {
 public:
  explicit Journal(std::filesystem::path path) : path_(std::move(path)) {}

  // Appends `event`, which must be an object with a string "id". Durable on return.
  void append(const nlohmann::json& event);

  // Every valid record (shared lock while reading). A missing file reads as empty.
  JournalScan read() const;
  // The raw bytes from `from` to the end of the file, copied under the shared lock (so no append is
  // in progress: every complete record in them is durable), for parsing after the lock is gone.
  // Never truncates a torn tail: only the exclusive lock's holder does that.
  JournalBytes read_bytes(std::uint64_t from) const;

  // Under the exclusive lock: scans the records from `from` (0, or a valid_end an earlier scan of
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
  mutable std::mutex mutex_;
};

// Pure: records from the bytes of a journal file (exposed for tests and tools). `base` is the
// file offset of bytes[0]: offsets, valid_end and file_size come out absolute.
JournalScan scan_journal(const std::string& bytes, std::uint64_t base = 0);

// The bytes of one record (header + payload).
std::string encode_journal_record(const nlohmann::json& event);

// The stamp of the valid record that starts at bytes[at] (`base`: the file offset of bytes[0]),
// or nothing when no valid record starts there.
std::optional<RecordStamp> stamp_journal_record(const std::string& bytes, std::size_t at, std::uint64_t base = 0);

// CRC-32C (Castagnoli), the journal's record checksum, also the journal snapshot's; by the SSE4.2
// crc32 instruction where the CPU has it. The reference is Boost.CRC's table-driven version.
std::uint32_t journal_crc32c(const char* data, std::size_t size);
std::uint32_t journal_crc32c_reference(const char* data, std::size_t size);

}  // namespace dlx::searcher
