// SPDX-License-Identifier: Apache-2.0
#include "logs_job.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "dlx/record/trial_record.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/searcher/journal_snapshot.hpp"
#include "dlx/searcher/search_state.hpp"
#include "dlx/searcher/method.hpp"
#include "dlx/searcher/trial_plan.hpp"
#include "dlx/store/experiment_layout.hpp"
#include "logs_slurm.hpp"
#include "slurm_job_name.hpp"

namespace dlx::cli {

namespace {

namespace fs = std::filesystem;

// The trial's last ticket and the array task that ran it. The ticket from the journal; where the
// journal has none (no task has taken the trial on: a job script that never ran dlx-launch) the
// trial's own id when every trial is one ticket (single, grid, random, stopping ASHA), as `dlx
// status` takes it. nullopt when neither says, or the experiment cannot be read.
struct TicketTask {
  int ticket = 0;
  int task = 0;
};

std::optional<TicketTask> last_ticket(const fs::path& directory, int trial) {
  try {
    auto experiment = config::load_snapshot(directory);
    std::optional<int> ticket;
    if (const auto path = directory / searcher::kJournalFileName; fs::exists(path)) {
      searcher::SearchState state(experiment);
      state.keep_recorded_after_mismatch();
      searcher::catch_up(state, searcher::Journal(path), searcher::journal_snapshot_path(path));
      if (const auto found = state.trials().find(trial); found != state.trials().end()) ticket = found->second.ticket;
    }
    const int trials = searcher::trial_count(experiment);
    if (!ticket && searcher::ticket_count(experiment) == trials && trial >= 0 && trial < trials) ticket = trial;
    if (!ticket) return std::nullopt;
    return TicketTask{*ticket, searcher::task_of_ticket(experiment, *ticket)};
  } catch (const std::exception&) {
    return std::nullopt;  // dlx status reports a damaged journal; here it only means "unknown"
  }
}

}  // namespace

std::optional<std::string> array_job_of(const fs::path& directory) {
  std::error_code error;
  const auto jobs = directory.parent_path() / ".jobs";
  std::optional<unsigned long long> newest;
  for (fs::directory_iterator it(jobs, error), end; !error && it != end; it.increment(error)) {
    const auto name = it->path().filename().string();
    if (!is_job_id(name) || name.find('_') != std::string::npos) continue;
    std::error_code unreadable;
    const auto target = fs::read_symlink(it->path(), unreadable);
    if (unreadable || fs::weakly_canonical(target, unreadable) != fs::weakly_canonical(directory, unreadable)) continue;
    const auto id = std::stoull(name);
    if (!newest || id > *newest) newest = id;
  }
  // No task has started yet (or its launch failed): the job named after the directory.
  if (!newest) return own_array_job_named(directory.filename().string());
  return std::to_string(*newest);
}

std::optional<TrialJob> trial_job(const fs::path& experiment_dir, int trial, const std::string& given,
                                  std::string& why_not) {
  try {
    const auto record = record::load_trial_record_if_exists(store::trial_record_path(experiment_dir, trial));
    if (record && is_job_id(record->slurm_job_id)) return TrialJob{record->slurm_job_id, "trial.h5"};
  } catch (const std::exception&) {
    // being replaced, or unreadable: ask the journal
  }
  const auto ticket = last_ticket(experiment_dir, trial);
  if (!ticket) {
    why_not = "neither its trial.h5 nor the searcher's journal names a Slurm job that ran it";
    return std::nullopt;
  }
  std::optional<std::string> array_job;
  if (is_job_id(given)) array_job = given.substr(0, given.find('_'));
  if (!array_job) array_job = array_job_of(experiment_dir);
  if (!array_job) {
    why_not = fmt::format("it runs in array task {}, but no job id is known for the experiment (give the "
                          "job id instead of the directory)", ticket->task);
    return std::nullopt;
  }
  const auto how = ticket->task == ticket->ticket
                       ? fmt::format("ticket {} of job {}", ticket->ticket, *array_job)
                       : fmt::format("ticket {} in array task {} of job {}", ticket->ticket, ticket->task, *array_job);
  return TrialJob{fmt::format("{}_{}", *array_job, ticket->task), how};
}

}  // namespace dlx::cli
