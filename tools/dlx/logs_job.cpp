// SPDX-License-Identifier: Apache-2.0
#include "logs_job.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "dlx/record/trial_record.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/searcher/journal_snapshot.hpp"
#include "dlx/searcher/search_state.hpp"
#include "dlx/store/experiment_layout.hpp"
#include "logs_slurm.hpp"
#include "slurm_job_name.hpp"

namespace dlx::cli {

namespace {

namespace fs = std::filesystem;

// The trial's last ticket from the journal; nullopt when there is none or it cannot be read.
std::optional<int> last_ticket(const fs::path& directory, int trial) {
  try {
    const auto path = directory / searcher::kJournalFileName;
    if (!fs::exists(path)) return std::nullopt;
    searcher::SearchState state(config::load_snapshot(directory));
    state.keep_recorded_after_mismatch();
    searcher::catch_up(state, searcher::Journal(path), searcher::journal_snapshot_path(path));
    const auto found = state.trials().find(trial);
    if (found == state.trials().end()) return std::nullopt;
    return found->second.ticket;
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
    why_not = fmt::format("its last array task is ticket {}, but no job id is known for the experiment "
                          "(give the job id instead of the directory)", *ticket);
    return std::nullopt;
  }
  return TrialJob{fmt::format("{}_{}", *array_job, *ticket), fmt::format("ticket {} of job {}", *ticket, *array_job)};
}

}  // namespace dlx::cli
