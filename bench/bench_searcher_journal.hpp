// SPDX-License-Identifier: Apache-2.0
#pragma once
// The cost of one journaled searcher event on a real file system: what a trial waits for when it
// asks the searcher (lock the journal, read the records it has not seen, decide, append,
// fdatasync, optionally rewrite experiment.h5, unlock), through the real Journal and Coordinator,
// measured in separate writer processes that share one journal, as array tasks on different
// nodes would. The reference is a bare pwrite + fdatasync of a record of the same size, in the
// same directory: the part of the cost no journal can avoid.
#include <filesystem>

#include "dlx/config/experiment.hpp"

namespace dlx::bench {

struct LatencySummary {
  long samples = 0;
  double p50_ms = 0, p99_ms = 0, mean_ms = 0, max_ms = 0;
};

struct JournalRun {
  LatencySummary event;       // one question, as its asker waits for it
  double events_per_second = 0;  // over all writers, wall clock
  double record_bytes = 0;    // mean size of a record appended
};

// `events` journaled events in total, spread over `writers` processes (fork), each asking a
// stopping-ASHA searcher for work and reporting validations (every question is one appended
// event). With `summary`, each process rewrites experiment.h5 by the rule of
// experiment_summary.hpp. `dir` gets a fresh subdirectory per run.
JournalRun measure_journaled_events(const config::Experiment& experiment, const std::filesystem::path& dir,
                                    int events, int writers, bool summary);

// pwrite + fdatasync of `bytes` bytes appended to a file in `dir`, `count` times.
LatencySummary measure_bare_fdatasync(const std::filesystem::path& dir, std::size_t bytes, int count);

// One rewrite of experiment.h5 for the state a simulated run of `experiment` leaves (every
// trial created, every decision), the median of `repeats` writes; `trials` and `decisions` say
// how big the file was. Also what a new process (forked, so nothing is warm in its heap) pays
// before its first question on that journal, the median of `repeats`: the lock-free catch-up of
// journal_snapshot.hpp with journal.snapshot where the writers' SnapshotPolicy left it (the
// snapshot read and checked, the tail after it replayed), and without a snapshot (the whole
// journal read and replayed, as before snapshots); and what writing that snapshot costs its writer.
struct SummaryRewrite {
  double median_ms = 0;
  std::size_t trials = 0, decisions = 0;
  std::uintmax_t bytes = 0;
  double replay_ms = 0;           // with the snapshot
  double full_replay_ms = 0;      // the whole journal
  std::size_t journal_bytes = 0;
  std::size_t journal_records = 0;
  std::size_t snapshot_records = 0;  // records the snapshot covers (the rest is the tail)
  std::uintmax_t snapshot_bytes = 0;
  double snapshot_write_ms = 0;      // encode + CRC + temp + fsync + rename + directory fsync
  // A question that appends an event and makes a snapshot due, asked of a process caught up with
  // that journal (no snapshot on disk): the longest stretch a forked prober saw the journal
  // locked during it (what every other writer may wait), and the question's latency as its asker
  // waits; and the same hold for the next question, which writes no snapshot.
  double snapshot_event_lock_ms = 0;
  double snapshot_event_ms = 0;
  double ordinary_event_lock_ms = 0;
};
SummaryRewrite measure_summary_rewrite(const config::Experiment& experiment, const std::filesystem::path& dir,
                                       int repeats);

}  // namespace dlx::bench
