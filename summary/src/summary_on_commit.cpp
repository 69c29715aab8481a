// SPDX-License-Identifier: Apache-2.0
// When a commit rewrites experiment.h5 (the rule is in experiment_summary.hpp), and the hook that
// does it without ever failing the question being answered.
#include <sys/stat.h>

#include <cerrno>
#include <ctime>
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "dlx/summary/experiment_summary.hpp"

namespace dlx::summary {

namespace {

// An event after which a trial or an array task is done with the searcher.
bool ends_something(const searcher::DecisionEntry& entry) {
  if (entry.type == "exit") return true;
  if (entry.type == "validation") return entry.action != "continue_training";
  return entry.type == "work" && entry.action == "none";
}

}  // namespace

SummaryFile summary_file(const std::filesystem::path& path) {
  struct stat info {};
  // Anything but a regular file there counts as missing: the rewrite is due, and reports why it
  // cannot replace it.
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return {};
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const auto ms = [](const struct timespec& t) {
    return std::chrono::milliseconds(static_cast<std::int64_t>(t.tv_sec) * 1000 + t.tv_nsec / 1'000'000);
  };
  return {ms(now) - ms(info.st_mtim), static_cast<std::uintmax_t>(info.st_size)};
}

bool experiment_finished(const searcher::SearchState& state) {
  if (static_cast<int>(state.tickets_answered()) < searcher::ticket_count(state.experiment())) return false;
  for (const auto& [id, trial] : state.trials()) {
    if (trial.status == "running" || !trial.settled) return false;
  }
  return true;
}

bool summary_due(const searcher::Coordinator::Commit& commit, const SummaryFile& file, const SummaryPolicy& policy) {
  using std::chrono::milliseconds;
  if (commit.forced || !file.age) return true;
  const auto estimated = milliseconds(static_cast<std::int64_t>(
      1000.0 * static_cast<double>(file.bytes) / policy.assumed_bytes_per_second / policy.max_lock_share));
  const auto gap = std::max(policy.min_gap, estimated);
  const auto staleness = std::max(policy.max_staleness, gap);
  if (*file.age >= staleness) return true;
  bool ends = false;
  const auto& decisions = commit.state.decisions();
  for (std::size_t i = commit.first_new; i < decisions.size() && !ends; ++i) ends = ends_something(decisions[i]);
  if (ends && *file.age >= gap) return true;
  return ends && experiment_finished(commit.state);  // only an ending event can finish it
}

void write_summary_on_commit(searcher::Coordinator& coordinator, const std::filesystem::path& experiment_dir,
                             std::string writer, std::FILE* log, SummaryPolicy policy) {
  auto failures = std::make_shared<long>(0);  // since the last successful write, this process
  coordinator.on_commit([=](const searcher::Coordinator::Commit& commit) {
    try {
      if (!summary_due(commit, summary_file(experiment_dir / kExperimentSummaryFileName), policy)) return;
      write_experiment_summary(experiment_dir, commit.state, commit.journal_end, writer);
      if (*failures > 0 && log) {
        fmt::print(log, "dlx: {} written again after {} failed attempt{}\n",
                   (experiment_dir / kExperimentSummaryFileName).string(), *failures, *failures == 1 ? "" : "s");
      }
      *failures = 0;
    } catch (const std::exception& error) {
      // experiment.h5 is a view of the journal, which is intact: the trial goes on, and a later
      // commit (or `dlx replay --write-h5`) writes the file again. Said once, not at every commit.
      if (log && (*failures)++ == 0) {
        fmt::print(log, "dlx: warning: {} (training goes on; the journal has every event; "
                        "`dlx replay --write-h5 {}` rewrites it)\n", error.what(), experiment_dir.string());
        std::fflush(log);
      }
    }
  });
}

void rewrite_experiment_summary(const std::filesystem::path& experiment_dir, const config::Experiment& experiment,
                                const std::string& writer) {
  std::error_code error;
  if (!std::filesystem::exists(experiment_dir / searcher::kJournalFileName, error)) {
    throw SummaryError(fmt::format("{} has no journal yet (no trial has asked the searcher anything): nothing to "
                                   "write to {}", experiment_dir.string(), kExperimentSummaryFileName));
  }
  searcher::Coordinator coordinator(experiment, experiment_dir / searcher::kJournalFileName);
  coordinator.on_commit([&](const searcher::Coordinator::Commit& commit) {
    write_experiment_summary(experiment_dir, commit.state, commit.journal_end, writer);
  });
  coordinator.commit_now();
}

bool summary_stale(const std::filesystem::path& experiment_dir) {
  struct stat journal {}, summary {};
  if (::stat((experiment_dir / searcher::kJournalFileName).c_str(), &journal) != 0) return false;
  if (::stat((experiment_dir / kExperimentSummaryFileName).c_str(), &summary) != 0) return true;
  const auto ns = [](const struct timespec& t) { return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec; };
  return ns(summary.st_mtim) < ns(journal.st_mtim);
}

}  // namespace dlx::summary
