// SPDX-License-Identifier: Apache-2.0
#include "dlx/searcher/coordinator.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <system_error>

#include <fmt/format.h>

#include "dlx/common/clock.hpp"

namespace dlx::searcher {

namespace {

// JSON has no NaN or infinity: a diverged trial's metric becomes the worst finite value.
double finite_metric(double metric, bool smaller_is_better) {
  if (std::isfinite(metric)) return metric;
  return smaller_is_better ? std::numeric_limits<double>::max() : std::numeric_limits<double>::lowest();
}

// A process that falls this far behind the journal between two questions (libdlx's rank 0 between
// reports) catches up without the exclusive lock first, as a new process does; below it, the
// records are few and cheaper to read under the lock than to copy twice.
constexpr std::uint64_t kLockFreeCatchUpBytes = 64 * 1024;

}  // namespace

Coordinator::Coordinator(config::Experiment experiment, std::filesystem::path journal_path)
    : state_(std::move(experiment)),
      journal_(std::move(journal_path)),
      snapshot_path_(journal_snapshot_path(journal_.path())),
      warn_([](const std::string& message) { fmt::print(stderr, "dlx: warning: {}\n", message); }) {}

void Coordinator::catch_up() {
  if (!caught_up_) {
    caught_up_ = true;
    const auto result = searcher::catch_up(state_, journal_, snapshot_path_);
    if (!result.ignored.empty()) warn_(result.ignored);
    applied_end_ = result.journal_end;
    records_ = result.records;
    last_ = result.last;
    snapshot_records_ = result.snapshot ? result.snapshot->records : 0;
    snapshot_ignored_ = !result.ignored.empty();
    return;
  }
  std::error_code error;
  const auto size = std::filesystem::file_size(journal_.path(), error);
  if (error || size < applied_end_ + kLockFreeCatchUpBytes) return;
  const auto bytes = journal_.read_bytes(applied_end_);
  if (bytes.file_size < applied_end_) return;  // cut behind our back: the locked read reports it
  const auto scan = scan_journal(bytes.bytes, applied_end_);
  for (const auto& record : scan.records) state_.apply(record);
  applied_end_ = scan.valid_end;
  records_ += scan.scanned();
  if (scan.last) last_ = scan.last;
}

void Coordinator::transact(const std::function<std::vector<nlohmann::json>()>& answer, bool force_commit) {
  catch_up();
  std::size_t first_new = 0;
  bool appended = false;
  // The bookkeeping of what this step reads and appends, taken over once it is committed.
  std::uint64_t records = records_;
  std::optional<RecordStamp> last = last_;
  const auto decide = [&](const JournalScan& tail) {
    for (const auto& record : tail.records) state_.apply(record);
    records = records_ + tail.scanned();
    if (tail.last) last = tail.last;
    first_new = state_.decisions().size();
    auto events = answer();
    appended = !events.empty();
    std::uint64_t offset = tail.valid_end;  // each event's own offset, as replay sees it
    for (const auto& event : events) {
      state_.apply_answered({offset, event});
      const auto bytes = encode_journal_record(event);
      last = stamp_journal_record(bytes, 0, offset);
      ++records;
      offset += bytes.size();
    }
    return events;
  };
  // After the append is durable and before the lock is released: experiment.h5.
  const auto committed = [&](std::uint64_t valid_end) {
    applied_end_ = valid_end;
    records_ = records;
    last_ = last;
    if (on_commit_ && (appended || force_commit)) on_commit_(Commit{state_, first_new, valid_end, !appended});
  };
  applied_end_ = journal_.transact(applied_end_, decide, committed);
  // The lock is released: state_ still reflects exactly the journal's [0, applied_end_), a prefix
  // no writer changes, and only this process touches it (journal_snapshot.hpp, Writing).
  if (appended) write_snapshot_if_due(applied_end_);
}

void Coordinator::write_snapshot_if_due(std::uint64_t valid_end) {
  if (!last_ || last_->end() != valid_end || !policy_.due(records_, snapshot_records_)) return;
  try {
    // Another process may have written one since this one last looked: judge against the file's
    // header (56 bytes), unless this process found that file not to match the journal.
    if (!snapshot_ignored_) {
      const auto on_disk = peek_journal_snapshot(snapshot_path_);
      if (on_disk && on_disk->journal_end <= valid_end && on_disk->records <= records_) {
        snapshot_records_ = std::max(snapshot_records_, on_disk->records);
        if (!policy_.due(records_, snapshot_records_)) return;
      }
    }
    // Busy (another writer is writing one) or superseded (one covering as much or more is there)
    // are not failures: either way a snapshot at least this recent is, or is about to be, on disk.
    const SnapshotCoverage coverage{valid_end, records_, *last_};
    const auto outcome = publish_journal_snapshot(journal_, snapshot_path_, state_, coverage, while_writing_snapshot_);
    if (outcome != SnapshotPublish::busy) snapshot_ignored_ = false;
  } catch (const std::exception& error) {
    warn_(fmt::format("cannot write the journal snapshot {}: {} (the event is committed; new processes replay "
                      "more of the journal until a later snapshot is written)", snapshot_path_.string(), error.what()));
  }
  // Also after a failure: try again at the next due point, not at every event.
  snapshot_records_ = records_;
}

void Coordinator::refresh() {
  transact([] { return std::vector<nlohmann::json>{}; });
}

void Coordinator::commit_now() {
  transact([] { return std::vector<nlohmann::json>{}; }, true);
}

Work Coordinator::request_work(int ticket) {
  Work work;
  transact([&]() -> std::vector<nlohmann::json> {
    if (auto recorded = state_.work_of(ticket)) {
      work = *recorded;
      if (work.kind != Work::Kind::train) return {};
      const auto& trial = state_.trials().at(work.trial);
      if (trial.status == "running" && trial.ticket == ticket) {
        work.target_length = trial.target_length;
        work.reason = fmt::format("ticket {} again (a requeue or another rank): {}", ticket, work.reason);
        return {};
      }
      work = Work{};
      work.trial = trial.id;  // the ticket's trial, ended: another rank of its run may say why
      work.reason = fmt::format("ticket {}'s trial {} is already {}", ticket, trial.id, trial.status);
      if (trial.status == "paused" && !trial.settled && trial.ticket == ticket) {
        // This ticket's trainer was told to pause (its rung checkpoint was durable before it
        // reported) but died before it settled the pause: settle it now, so that the trial
        // can be promoted.
        state_.method().on_trial_exited(trial.id, ExitKind::paused);
        return {SearchState::exit_event(trial.id, ExitKind::paused, "settled by its requeued ticket",
                                        trial.last_length, unix_seconds_now())};
      }
      return {};
    }
    // Snapshotting the method costs O(trials); it is only needed to take back an answer that
    // names an unsettled trial, and there is none most of the time.
    const bool may_take_back = state_.unsettled() > 0;
    const auto before = may_take_back ? state_.method().snapshot() : nlohmann::json();
    work = state_.method().on_work_requested(ticket);
    if (work.kind == Work::Kind::train) {
      auto found = state_.trials().find(work.trial);
      if (may_take_back && found != state_.trials().end() && !found->second.settled) {
        // Promotable, but its last array task has not finished with it yet: take the answer
        // back (it is not recorded) and ask again later.
        state_.restore_method(before);
        work = Work{};
        work.kind = Work::Kind::wait;
        work.reason = fmt::format("trial {} is promotable but its last task is still pausing it",
                                  found->first);
        return {};
      }
    }
    if (work.kind == Work::Kind::wait) return {};
    return {SearchState::work_event(ticket, work, unix_seconds_now())};
  });
  return work;
}

Decision Coordinator::report_validation(int trial, std::int64_t length, double metric) {
  Decision decision;
  metric = finite_metric(metric, state_.experiment().searcher.smaller_is_better);
  transact([&]() -> std::vector<nlohmann::json> {
    if (auto recorded = state_.decision_of(trial, length)) {
      decision = *recorded;
      return {};
    }
    decision = state_.method().on_validation(trial, length, metric);
    return {SearchState::validation_event(trial, length, metric, decision, unix_seconds_now())};
  });
  return decision;
}

void Coordinator::report_exit(int trial, ExitKind how, const std::string& detail) {
  transact([&]() -> std::vector<nlohmann::json> {
    const auto found = state_.trials().find(trial);
    const std::int64_t length = found == state_.trials().end() ? 0 : found->second.last_length;
    if (state_.seen(fmt::format("exit/{}/{}/{}", trial, to_string(how), length))) return {};
    state_.method().on_trial_exited(trial, how);
    return {SearchState::exit_event(trial, how, detail, length, unix_seconds_now())};
  });
}

bool Coordinator::report_lost(const TrialState& seen, const std::string& detail) {
  bool appended = false;
  transact([&]() -> std::vector<nlohmann::json> {
    const auto found = state_.trials().find(seen.id);
    if (found == state_.trials().end()) return {};
    const auto& now = found->second;
    // Anything it did since it was judged lost (reported, was resumed by a requeue, settled)
    // shows it is not.
    if (now.status != seen.status || now.ticket != seen.ticket || now.last_length != seen.last_length) return {};
    ExitKind how = ExitKind::failed;
    if (now.status == "paused" && !now.settled) {
      how = ExitKind::paused;
    } else if (now.status != "running") {
      return {};
    }
    if (state_.seen(fmt::format("exit/{}/{}/{}", seen.id, to_string(how), now.last_length))) return {};
    state_.method().on_trial_exited(seen.id, how);
    appended = true;
    return {SearchState::exit_event(seen.id, how, detail, now.last_length, unix_seconds_now())};
  });
  return appended;
}

}  // namespace dlx::searcher
