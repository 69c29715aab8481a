// SPDX-License-Identifier: Apache-2.0
#pragma once
// The journal snapshot: <experiment>/journal.snapshot, the searcher's whole state (SearchState:
// trials, decisions, recorded answers, applied ids, the method's and sampler's snapshot) as of a
// prefix of the journal, so that a new process (each dlx-launch, libdlx's rank 0 at its first
// report) loads it and replays only the journal's tail instead of the whole file. The journal
// stays the only source of truth: the snapshot is a cache of "replay the first N bytes", checked
// against the journal before use, and ignored (full replay, a one-line warning) when it does not
// match. Deleting it is always safe.
//
// File format (little-endian), a 56-byte header and the body:
//    0 u32 magic "DLXS"        4 u32 format version (2)
//    8 u64 journal_end: the journal bytes [0, journal_end) it covers (a record boundary)
//   16 u64 records: the valid records in them, duplicates included
//   24 u64 offset of the last record covered (that record ends at journal_end)
//   32 u32 that record's CRC-32C (the one in its header)
//   36 u32 CRC-32C of the experiment's frozen experiment.yaml (config::to_yaml)
//   40 u64 body length           48 u32 CRC-32C of the body
//   52 u32 CRC-32C of header bytes 0..51
//   56 body: SearchState::encode() (layout in searcher/src/journal/journal_snapshot_state.cpp)
//
// Writing (Coordinator, after an append): the writer is the process whose append made one due
// (SnapshotPolicy, judged against the snapshot already on disk: its 56-byte header is read, so
// that many processes do not each write one for the same stretch). It writes the state it holds
// in memory, which reflects exactly the journal's [0, valid_end) as of its own append: the records
// it applied and the events it appended, and nothing else (no other process touches that memory,
// and the Coordinator is used by one thread at a time). The journal's bytes below valid_end never
// change afterwards (appends only; torn-tail recovery only cuts invalid bytes after the last valid
// record, and the writers of these records made them durable before they released the lock), so
// that state stays exactly a prefix of the journal however much other writers append meanwhile.
// Hence the write needs no journal lock, and it takes none: the writer first releases the
// journal's writers' lock (the encode, mostly the method's JSON snapshot, and the fsyncs take 0.4-1.3 s at 10,000
// trials; every other trial's question used to wait that long), then:
//   1. takes an exclusive fcntl lock on <experiment>/journal.snapshot.lock without waiting
//      (POSIX locks work across nodes, as the journal's do; a process-wide mutex stands in for it
//      between the threads of one process, since fcntl locks belong to the process). If another
//      writer holds it, it skips: that one is writing a snapshot of about the same stretch. The
//      file is created 0600 (cut to at most 0600, refused if it is a link, not a regular file or
//      another user's; journal.hpp, Files): a group member who could open it could hold it and
//      keep every writer from writing a snapshot;
//   2. under that lock, reads the header of the snapshot on disk; if it covers at least as much
//      of the journal (journal_end >= its own) and the journal still holds the record it names
//      (the reader's check), it skips: a snapshot never replaces one that covers more. A stale
//      or foreign one is replaced, whatever it claims to cover;
//   3. removes the temporaries of writers killed mid-write (it holds the snapshot lock, so no
//      other write is in progress), writes the file to a temporary name (.tmp.journal.snapshot.*),
//      fsyncs it, renames it over journal.snapshot and fsyncs the directory: a kill -9 at any
//      instant leaves the old snapshot or the new one, never a torn one; releases the lock.
// Steps 2 and 3 under one lock make "check, then replace" atomic among writers, so the snapshot
// on disk only moves forward. A failure to write it is a warning and never fails the event (it
// is committed by then). Readers take no snapshot lock: the rename is atomic, and they check
// what they read anyway.
//
// Reading (catch_up below, a new process, with no lock held while it parses): the header and body
// checksums, the format version and the experiment's checksum must match, and the journal must
// still hold, at the recorded offset, a valid record with the recorded CRC that ends at
// journal_end. A journal cut below it (torn-tail recovery of last records damaged on disk after
// the snapshot was taken, or a journal restored or replaced by hand), rewritten, or another
// experiment's fails that check. Then the state is restored from the body and the records after journal_end
// are applied. Why matching the last record suffices: no dlx writer ever changes a byte below a
// journal's valid end (appends only; torn-tail recovery only cuts invalid bytes after the last
// valid record), so a journal that still has the snapshot's last record, intact, where it was, has
// the whole prefix the snapshot was taken from (another writer would have to reproduce that
// record's bytes at that offset, CRC included).
//
// Lock-free catch-up: the journal's bytes are copied with no lock (Journal::read_bytes; journal.hpp,
// Reading: every complete record with a matching checksum in the copy is final, and an append in
// progress shows as a torn tail after them) and parsed and replayed; so start-ups never queue
// behind each other on the writers' lock for the whole replay, nor does a writer wait for them.
// The copy stops at its valid end: a torn tail or a corrupt record in it is left alone (only the
// writers' lock's holder recovers a torn tail, and reports corruption, as before). The
// coordinator then takes the writers' lock and reads on from the end of what it applied: the
// records appended in between, usually a few.
//
// Read-only users: `dlx status` and `dlx ckpt` (tools/dlx) catch up the same way, with catch_up
// alone: they read the snapshot and copy the journal with no lock, never take the writers' lock,
// never write a snapshot or the snapshot lock file, so they work for a user who
// can read the experiment directory but not write it, and print what a full replay would give.
// `dlx replay` does not use the snapshot: it checks every recorded answer against the method
// and prints every decision, so it needs the whole journal.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "dlx/searcher/journal.hpp"
#include "dlx/searcher/search_state.hpp"

namespace dlx::searcher {

inline constexpr const char* kJournalSnapshotFileName = "journal.snapshot";
inline constexpr const char* kJournalSnapshotLockFileName = "journal.snapshot.lock";
// 2: PBT's method snapshot names each ticket's trial (Determined's trial numbering) and ASHA's
// layout follows Determined's (real divisors, brackets): a version-1 snapshot is ignored (full
// replay), and a journal written by the older searcher then fails replay with a clear mismatch.
inline constexpr std::uint32_t kJournalSnapshotVersion = 2;

// The journal prefix a snapshot covers.
struct SnapshotCoverage {
  std::uint64_t journal_end = 0;  // bytes [0, journal_end)
  std::uint64_t records = 0;      // valid records in them, duplicates included
  RecordStamp last;               // the last of them (last.end() == journal_end)
  friend bool operator==(const SnapshotCoverage&, const SnapshotCoverage&) = default;
};

// When a new snapshot is due: at least `min_records` records and at least 1/`fraction` of the
// records the current one covers have been appended since it. Why both: a new process replays at
// most that tail (about an eighth of a full replay at most, at scale), and the snapshots written
// over an experiment's life grow geometrically, so their total writing time stays a constant
// multiple of the last one's (about 9x), whatever the experiment's size, and the share of the
// journal lock they take stays small (docs/benchmarks.md, "Journaled events"). Below 1000
// records a full replay takes a few milliseconds and no snapshot is written.
struct SnapshotPolicy {
  std::uint64_t min_records = 1000;
  std::uint64_t fraction = 8;
  bool due(std::uint64_t records, std::uint64_t snapshot_records) const {
    if (records < snapshot_records) return true;  // the snapshot is not of this journal
    const auto since = records - snapshot_records;
    return since >= min_records && since * fraction >= snapshot_records;
  }
};

// journal.snapshot beside the journal at `journal_path`, and the snapshot writers' lock file.
std::filesystem::path journal_snapshot_path(const std::filesystem::path& journal_path);
std::filesystem::path journal_snapshot_lock_path(const std::filesystem::path& snapshot_path);

// CRC-32C of the experiment's frozen YAML: a snapshot of another experiment.yaml is never used.
std::uint32_t experiment_checksum(const config::Experiment& experiment);

// The file's bytes for `state`, which reflects exactly the journal prefix `coverage` names.
std::string encode_journal_snapshot(const SearchState& state, const SnapshotCoverage& coverage);

// Crash-safe write of encode_journal_snapshot() to `path` (step 3 above); removes temporaries of
// `path` left by killed writers first. Only the holder of the snapshot lock may call it (writers
// call publish_journal_snapshot, which takes it). Throws on failure (the caller warns and goes on).
void write_journal_snapshot(const std::filesystem::path& path, const SearchState& state,
                            const SnapshotCoverage& coverage);

// A writer's steps 1-3 above, with no journal lock held: `state` reflects exactly the prefix of
// `journal` that `coverage` names. Returns what happened; throws on a failure to lock or write
// (the caller warns and goes on). `while_locked`, when given, runs once the snapshot lock is held
// and before anything is read or written (tests: what others can do meanwhile).
enum class SnapshotPublish {
  written,
  busy,        // another writer holds the snapshot lock: nothing done
  superseded,  // the snapshot on disk covers at least as much of this journal: left alone
};
SnapshotPublish publish_journal_snapshot(const Journal& journal, const std::filesystem::path& path,
                                         const SearchState& state, const SnapshotCoverage& coverage,
                                         const std::function<void()>& while_locked = {});

// Whether `journal` still holds, at coverage.last.offset, a valid record with that CRC ending at
// coverage.journal_end: the check a snapshot must pass to be used (see Reading below).
bool journal_holds(const Journal& journal, const SnapshotCoverage& coverage);

// The coverage in the header of the file at `path`, when it has a valid header (magic, version,
// header checksum; the body is not read): what a writer compares with to know whether a new
// snapshot is due. Nothing for a missing or unreadable file.
std::optional<SnapshotCoverage> peek_journal_snapshot(const std::filesystem::path& path);

// A new process's catch-up, with no lock held while parsing (see above): restores the fresh
// `state` from the snapshot at `snapshot_path` when it is valid and matches `journal`, else starts
// from nothing, then applies the journal's valid records after that point. Throws what
// SearchState::apply throws (a journal written by another searcher) and what reading the
// journal throws; a bad snapshot never throws, it is reported in `ignored`.
struct CatchUp {
  std::optional<SnapshotCoverage> snapshot;  // the snapshot the state was restored from
  std::uint64_t journal_end = 0;             // the state reflects the journal's [0, journal_end)
  std::uint64_t records = 0;                 // valid records in that prefix, duplicates included
  std::optional<RecordStamp> last;           // the last of them
  std::string ignored;                       // why a snapshot there was not used ("" if none was)
  std::string corruption;  // an invalid record with valid ones after it, after the snapshot: the
                           // state stops before it (scan_journal's JournalScan::corruption)
};
CatchUp catch_up(SearchState& state, const Journal& journal, const std::filesystem::path& snapshot_path);

}  // namespace dlx::searcher
