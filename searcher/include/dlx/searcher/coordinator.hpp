// SPDX-License-Identifier: Apache-2.0
#pragma once
// The searcher without a daemon. Every array task that asks the searcher something runs the
// method itself, under the experiment journal's exclusive lock:
//
//   0. a process's first question (and any after it fell 64 KiB or more behind) catches up
//      without the exclusive lock: it loads <experiment>/journal.snapshot when that is valid and
//      matches the journal, copies the journal's bytes after it under the shared lock, and
//      replays them with no lock held (journal_snapshot.hpp: protocol and why it is sound);
//   1. lock the journal (fcntl, works across nodes) and read the records this process has not
//      applied yet (the file is append-only below its valid end, so a prefix once read is final);
//   2. feed them to this process's SearchState, in journal order: its method now holds exactly
//      the state every earlier decision left, whichever node took it;
//   3. if the question was answered before (same id: a requeued ticket asking for its work
//      again, a resumed trial reporting the same length, another rank of the same trial), return
//      the recorded answer; otherwise ask the method, append the event with the answer, fdatasync;
//   4. run the on_commit hook, if any (experiment.h5: summary/), still under the lock, so
//      derived files are written by one process at a time and never show an event that is not
//      durable in the journal;
//   5. unlock. The answer is returned only once it is durable;
//   6. after an append, when SnapshotPolicy says one is due, write journal.snapshot of this
//      process's state, with the journal unlocked (other trials append meanwhile) and under the
//      snapshot writers' own lock, skipped when another writer holds it, never replacing a
//      snapshot that covers more (journal_snapshot.hpp, Writing: why that state is still exactly
//      a prefix of the journal). A failure is a warning: the event is committed.
// So decisions are serialised across the whole experiment, each is taken on the state all earlier
// ones produced, a crash at any point loses nothing acknowledged, and `dlx replay` (the same
// SearchState over the whole file) rebuilds exactly the live state.
//
// A Work of kind wait is not recorded (the method's state is unchanged by it); the caller sleeps
// and asks again.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "dlx/config/experiment.hpp"
#include "dlx/searcher/journal.hpp"
#include "dlx/searcher/journal_snapshot.hpp"
#include "dlx/searcher/method.hpp"
#include "dlx/searcher/search_state.hpp"

namespace dlx::searcher {

inline constexpr const char* kJournalFileName = "journal";

class Coordinator {
 public:
  Coordinator(config::Experiment experiment, std::filesystem::path journal_path);

  // The work of array task `ticket`. Asked again by the same ticket (a requeue, another rank), it
  // returns the recorded work with the trial's current target, or Work none naming that trial
  // (Work::trial) when it has since ended.
  Work request_work(int ticket);
  // Trial `trial` reached `length` with the searcher metric `metric` (raw; a NaN or infinite
  // metric counts as the worst possible result).
  Decision report_validation(int trial, std::int64_t length, double metric);
  // Trial `trial` ended outside a decision: failed for good (max_restarts exhausted), or
  // completed on its own length when the searcher gave none.
  void report_exit(int trial, ExitKind how, const std::string& detail);

  // Trial `seen.id` is lost (launch/lost_trials.hpp: the array task that had it ended without a
  // word): when the journal still has it as `seen` (status, ticket, last length), a running trial
  // exits failed with `detail`, a pause its task never settled is settled; otherwise, or when
  // another process reported it first, nothing. Returns whether this call appended the event.
  bool report_lost(const TrialState& seen, const std::string& detail);

  // Brings the state up to the journal's end without appending.
  void refresh();
  const SearchState& state() const { return state_; }

  // Called under the journal lock after every append, once the appended events are durable, with
  // the new state and the index of the first decision entry those events added (so
  // state.decisions()[first_new..] are this commit's): the place to rewrite experiment.h5 with no
  // other writer in between. It must not throw (the answer is committed by then; an exception
  // would reach the caller as if the question had failed).
  struct Commit {
    const SearchState& state;
    std::size_t first_new = 0;       // == decisions().size() when nothing was appended
    std::uint64_t journal_end = 0;   // the journal prefix `state` reflects, in bytes
    bool forced = false;             // by commit_now(), not by an append
  };
  void on_commit(std::function<void(const Commit&)> hook) { on_commit_ = std::move(hook); }

  // Brings the state up to the journal's end and runs the on_commit hook under the lock with
  // forced set, appending nothing (`dlx replay --write-h5`: one writer even while trials run).
  void commit_now();

  // Where this process's warnings go (a journal snapshot ignored or not written); by default
  // stderr, as "dlx: warning: <message>".
  void on_warning(std::function<void(const std::string&)> warn) { warn_ = std::move(warn); }
  // When this process writes journal.snapshot after an append (tests use small values).
  void snapshot_policy(SnapshotPolicy policy) { policy_ = policy; }
  // Runs while this process holds the snapshot lock, before it writes journal.snapshot (step 6;
  // tests: what other processes can do meanwhile).
  void while_writing_snapshot(std::function<void()> hook) { while_writing_snapshot_ = std::move(hook); }

 private:
  // One locked step: apply the unseen records, then `answer` decides what to append.
  void transact(const std::function<std::vector<nlohmann::json>()>& answer, bool force_commit = false);
  // Step 0: the lock-free catch-up (snapshot and tail at the first question, a long tail later).
  void catch_up();
  // Step 6, with the journal unlocked: journal.snapshot for the state at `valid_end`, when due.
  void write_snapshot_if_due(std::uint64_t valid_end);

  SearchState state_;
  Journal journal_;
  std::filesystem::path snapshot_path_;
  SnapshotPolicy policy_;
  bool caught_up_ = false;
  std::uint64_t applied_end_ = 0;
  std::uint64_t records_ = 0;            // valid records in [0, applied_end_), duplicates included
  std::optional<RecordStamp> last_;      // the last of them
  std::uint64_t snapshot_records_ = 0;   // records the newest snapshot this process knows covers
  bool snapshot_ignored_ = false;        // the one on disk did not match: do not trust its header
  std::function<void(const Commit&)> on_commit_;
  std::function<void(const std::string&)> warn_;
  std::function<void()> while_writing_snapshot_;
};

}  // namespace dlx::searcher
