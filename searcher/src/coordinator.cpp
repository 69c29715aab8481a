#include "dlx/searcher/coordinator.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "dlx/common/clock.hpp"

namespace dlx::searcher {

namespace {

// JSON has no NaN or infinity: a diverged trial's metric becomes the worst finite value.
double finite_metric(double metric, bool smaller_is_better) {
  if (std::isfinite(metric)) return metric;
  return smaller_is_better ? std::numeric_limits<double>::max() : std::numeric_limits<double>::lowest();
}

}  // namespace

Coordinator::Coordinator(config::Experiment experiment, std::filesystem::path journal_path)
    : state_(std::move(experiment)), journal_(std::move(journal_path)) {}

void Coordinator::transact(const std::function<std::vector<nlohmann::json>()>& answer, bool force_commit) {
  std::size_t first_new = 0;
  bool appended = false;
  const auto decide = [&](const JournalScan& tail) {
    for (const auto& record : tail.records) state_.apply(record);
    first_new = state_.decisions().size();
    auto events = answer();
    appended = !events.empty();
    std::uint64_t offset = tail.valid_end;  // each event's own offset, as replay sees it
    for (std::size_t i = 0; i < events.size(); ++i) {
      state_.apply_answered({offset, events[i]});
      if (i + 1 < events.size()) offset += encode_journal_record(events[i]).size();
    }
    return events;
  };
  // After the append is durable and before the lock is released: experiment.h5 and the like.
  const auto committed = [&](std::uint64_t valid_end) {
    if (on_commit_ && (appended || force_commit)) on_commit_(Commit{state_, first_new, valid_end, !appended});
  };
  applied_end_ = journal_.transact(applied_end_, decide, committed);
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

}  // namespace dlx::searcher
