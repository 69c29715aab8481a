// SPDX-License-Identifier: Apache-2.0
#include "status_report.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <new>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dlx/record/system_series.hpp"
#include "dlx/record/trial_record.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/common/error.hpp"
#include "dlx/config/display_text.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/searcher/journal_snapshot.hpp"
#include "dlx/searcher/method.hpp"
#include "dlx/searcher/search_state.hpp"
#include "dlx/store/code_info.hpp"
#include "dlx/store/experiment_layout.hpp"
#include "dlx/store/trial_logs.hpp"
#include "dlx/searcher/method.hpp"
#include "hparam_warnings.hpp"
#include "status_sources.hpp"
#include "trial_status.hpp"

namespace dlx::cli {

namespace {

// The searcher's state from the journal, when the experiment has one (a TPE or PBT trial's
// hyperparameters exist only there): journal.snapshot and the journal's tail after it, as a new
// trial process catches up (searcher::catch_up), read-only: no exclusive lock, nothing written,
// so any user who can read the directory gets it. A snapshot that does not match is ignored with
// a warning (the whole journal is replayed); the state, and so the table, is the same either
// way. A journal that cannot be read is reported, not fatal; one this dlx's searcher no longer
// reproduces (an older dlx's) is shown with its recorded decisions and a warning.
// Its warnings go to `warnings`, whole lines for stderr.
std::optional<searcher::SearchState> search_state(const std::filesystem::path& directory,
                                                  const config::Experiment& experiment,
                                                  std::vector<std::string>& warnings) {
  const auto path = directory / searcher::kJournalFileName;
  if (!std::filesystem::exists(path)) return std::nullopt;
  try {
    searcher::SearchState state(experiment);
    state.keep_recorded_after_mismatch();  // an older dlx's journal: its recorded decisions stand
    const auto caught_up = searcher::catch_up(state, searcher::Journal(path), searcher::journal_snapshot_path(path));
    if (!caught_up.ignored.empty()) {
      warnings.push_back(fmt::format("dlx status: warning: {}\n", config::printable(caught_up.ignored)));
    }
    if (!caught_up.corruption.empty()) {
      warnings.push_back(fmt::format("dlx status: warning: {}: {}; the table shows the searcher's state before it\n",
                                     config::printable(path.string()), caught_up.corruption));
    }
    if (!state.divergence().empty()) {
      warnings.push_back(fmt::format(
          "dlx status: warning: {}; the table shows the journal's recorded decisions from there on\n",
          config::printable(state.divergence())));
    }
    return state;
  } catch (const Error& e) {
    warnings.push_back(fmt::format("dlx status: warning: cannot replay {}: {}\n", config::printable(path.string()),
                                   config::printable(e.what())));
    return std::nullopt;
  } catch (const std::bad_alloc&) {
    warnings.push_back(fmt::format(
        "dlx status: warning: cannot replay {}: out of memory (is it far larger than usual?)\n",
        config::printable(path.string())));
    return std::nullopt;
  } catch (const std::exception&) {  // a library's own words would mean nothing here
    warnings.push_back(fmt::format(
        "dlx status: warning: cannot replay {}: internal error (a dlx bug: please report it)\n",
        config::printable(path.string())));
    return std::nullopt;
  }
}

// `last_step`: the last step the trial's record holds. A failed trial failed where it last
// reported anything, which is past the searcher's last_length (its last validation) when it
// trained on before it crashed; so did a trial whose trainer ended training before the
// searcher's length (completed short of its target: the searcher heard no report on the way).
std::string searcher_summary(const searcher::TrialState& trial, std::optional<std::int64_t> last_step) {
  // Without a searcher length (single, grid, random without max_length) a trial trains to its own
  // length and the searcher never hears of it again: it has nothing to say ("to 0" would read as
  // a target, and would stay on completed trials).
  if (trial.status == "running") return trial.target_length > 0 ? fmt::format("to {}", trial.target_length) : "";
  const bool ended_short = trial.status == "completed" && trial.last_length < trial.target_length;
  const auto at = trial.status == "failed" || ended_short ? std::max(trial.last_length, last_step.value_or(0))
                                                         : trial.last_length;
  return fmt::format("{} at {}", trial.status, at);
}

// "job 42: 3 tasks pending, 1 running", "job 42: gone (Slurm no longer knows it)".
std::string slurm_summary(const SlurmView& slurm) {
  if (!slurm.why_unknown.empty()) return fmt::format("Slurm not asked: {}", slurm.why_unknown);
  if (slurm.gone) return fmt::format("job {}: Slurm no longer knows it (ended)", slurm.job_id);
  std::map<std::string, int> states;
  for (const auto& [id, task] : slurm.tasks) states[task.state]++;
  std::string text;
  for (const auto& [state, count] : states) {
    std::string lower = state;
    std::ranges::transform(lower, lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    text += fmt::format("{}{} {}", text.empty() ? "" : ", ", count, lower);
  }
  return fmt::format("job {}: {}", slurm.job_id, text.empty() ? "no task queued or running" : "tasks " + text);
}

// The searcher has nothing left to do: every array task has had its answer (train or none), no
// trial is running in its eyes, and every trial it paused has posted its exit (trial.h5 written for
// the last time). Paused trials then stay paused: nothing would resume them.
bool searcher_done(const searcher::SearchState& search, const config::Experiment& experiment) {
  return search.tickets_answered() >= static_cast<std::size_t>(searcher::ticket_count(experiment)) &&
         search.unsettled() == 0 &&
         std::ranges::none_of(search.trials(), [](const auto& entry) { return entry.second.status == "running"; });
}

std::optional<std::int64_t> last_step(const record::TrialRecord& record) {
  std::optional<std::int64_t> step;
  for (const auto* table : {&record.training, &record.validation}) {
    if (!table->empty()) step = std::max(step.value_or(table->steps().back()), table->steps().back());
  }
  return step;
}

}  // namespace

namespace {

// What code the trials run (store/code_info.hpp); a damaged code.json is a warning, not a failure.
void read_code_origin(const std::filesystem::path& directory, StatusReport& report) {
  try {
    const auto info = store::read_code_info(directory);
    if (!info) return;
    report.code = store::describe_code(*info);
    if (info->value("git", false)) {
      report.code_commit = info->value("commit", "");
      report.code_dirty = info->value("dirty", false);
      const std::string branch = info->value("branch", "");
      report.code = "commit " + report.code + (branch.empty() ? "" : " on " + branch);
    }
  } catch (const std::exception& e) {
    report.warnings.push_back(fmt::format("dlx status: warning: {}\n", config::printable(e.what())));
  }
}

// The array task of a trial: the searcher's last ticket for it, else its own id where every trial
// is one ticket (single, grid, random, stopping ASHA); nullopt when not known yet.
std::optional<int> ticket_of(int trial, const std::optional<searcher::SearchState>& search, bool trial_is_ticket) {
  if (search) {
    if (auto found = search->trials().find(trial); found != search->trials().end() && found->second.ticket) {
      return found->second.ticket;
    }
  }
  if (trial_is_ticket) return trial;
  return std::nullopt;
}

// What the row shows as its state (trial_status.hpp), from the record and Slurm. `array_tasks`:
// the array's task count when its tasks run several tickets in turn (0: one task per ticket).
void settle_state(TrialRow& row, const SlurmView* slurm, int max_restarts, int array_tasks) {
  if (row.state == "unreadable") return;
  const RecordFacts facts{row.record_state, row.stop_reason, row.failures, row.same_failures};
  // A task that runs several tickets may have ended before this one's turn: no log says nothing.
  const auto launched = row.launched || array_tasks == 0 ? std::optional(row.launched) : std::nullopt;
  auto task_id = row.ticket;
  if (task_id && array_tasks > 0) *task_id %= array_tasks;
  const auto* task = slurm ? slurm->task(task_id) : nullptr;
  auto shown = trial_status(facts, task, slurm, max_restarts, launched);
  if (array_tasks > 0 && facts.state.empty() && shown.state == "starting") {
    // Its task runs, but an earlier ticket of it: this trial waits for its turn.
    shown = {"pending", "", fmt::format("pending: waits its turn in array task {}", *task_id)};
  }
  row.state = std::move(shown.state);
  row.state_note = std::move(shown.note);
  row.detail = std::move(shown.detail);
}

std::optional<SystemNow> system_now(const std::filesystem::path& trial_dir) {
  SystemNow now;
  double gpu_sum = 0;
  int gpus = 0;
  for (const auto& rank : record::load_latest_system_samples(trial_dir)) {
    const auto& samples = rank.samples;
    if (samples.empty()) continue;
    now.cpu_percent += samples.last("cpu_percent").value_or(0);
    now.memory_bytes += samples.last("memory_bytes").value_or(0);
    for (int k = 0;; ++k) {
      const auto util = samples.last(fmt::format("gpu{}_util_percent", k));
      const auto memory = samples.last(fmt::format("gpu{}_memory_bytes", k));
      if (!util && !memory) break;
      if (util) {
        gpu_sum += *util;
        ++gpus;
      }
      if (memory) now.gpu_memory_bytes = now.gpu_memory_bytes.value_or(0) + *memory;
    }
    const double at = samples.wall_times().back();
    now.sampled_unix = now.ranks == 0 ? at : std::min(now.sampled_unix, at);
    ++now.ranks;
  }
  if (now.ranks == 0) return std::nullopt;
  if (gpus > 0) now.gpu_percent = gpu_sum / gpus;
  return now;
}

// One trial's row: its plan, what the searcher says of it (its hyperparameters, for a trial it
// created) and what its trial.h5 says; the record itself into `kept` when the caller keeps it.
TrialRow trial_row(searcher::TrialSpec spec, const std::filesystem::path& directory, const config::Experiment& experiment,
                   const std::optional<searcher::SearchState>& search, std::optional<record::TrialRecord>* kept) {
  const auto& metric = experiment.searcher.metric;
  TrialRow row;
  row.spec = std::move(spec);
  const searcher::TrialState* known = nullptr;
  if (search) {
    if (auto found = search->trials().find(row.spec.id); found != search->trials().end()) {
      known = &found->second;
      row.spec.hparams = found->second.hparams;
      if (found->second.status == "running") row.target_length = found->second.target_length;
    }
  }
  try {
    if (auto record = record::load_trial_record_if_exists(store::trial_record_path(directory, row.spec.id))) {
      row.state = record->state;
      row.record_state = record->state;
      row.last = record->validation.last(metric);
      row.best = record->validation.best(metric, experiment.searcher.smaller_is_better);
      row.metric_in_training_only = !row.last && record->training.last(metric).has_value();
      row.stop_reason = record->stop_reason;
      row.last_error = record->last_error;
      row.failures = record->failures;
      row.same_failures = record->same_failures;
      row.hparam_warnings = record->hparam_warnings;
      row.nodes = record->nodes;
      row.restarts = record->restart_events;
      row.last_step = last_step(*record);
      row.metric_values = record->validation.series(metric).values;
      if (record->state == "running") row.system = system_now(store::trial_record_path(directory, row.spec.id).parent_path());
      if (kept) *kept = std::move(record);
    }
  } catch (const std::exception& e) {
    row.state = "unreadable";
    row.problem = e.what();
  }
  if (known) row.searcher = searcher_summary(*known, row.last_step);
  std::error_code absent;
  row.launched = std::filesystem::is_directory(store::trial_logs_dir(store::trial_dir(directory, row.spec.id)), absent);
  return row;
}

// The images the trials ran in, as dlx-launch recorded them (trials/<id>/container.json); a
// damaged file is a warning.
void read_containers(const std::filesystem::path& directory, const std::vector<TrialRow>& rows, StatusReport& report) {
  for (const auto& row : rows) {
    const auto file = store::trial_record_path(directory, row.spec.id).parent_path() / "container.json";
    std::error_code absent;
    if (!std::filesystem::is_regular_file(file, absent)) continue;
    try {
      const auto info = nlohmann::json::parse(read_small_file(file, 64 << 10));
      const std::string digest = info.value("digest", "");
      const auto line = fmt::format("{}{} with {}", info.value("image", "?"), digest.empty() ? "" : " (" + digest + ")",
                                    info.value("runtime", "?"));
      if (std::find(report.containers.begin(), report.containers.end(), line) == report.containers.end()) {
        report.containers.push_back(line);
      }
    } catch (const std::exception& e) {
      report.warnings.push_back(fmt::format("dlx status: warning: {}: {}\n", file.string(), config::printable(e.what())));
    }
  }
}

}  // namespace

StatusReport read_status(const std::filesystem::path& directory, const config::Experiment& experiment,
                         StatusSources* sources, const SlurmView* slurm) {
  const bool smaller = experiment.searcher.smaller_is_better;
  StatusReport report;
  report.directory = directory;
  read_code_origin(directory, report);
  auto& rows = report.rows;
  auto search = search_state(directory, experiment, report.warnings);
  const bool trial_is_ticket = searcher::ticket_count(experiment) == searcher::trial_count(experiment);
  const int tasks = searcher::array_task_count(experiment);
  const int array_tasks = tasks < searcher::ticket_count(experiment) ? tasks : 0;
  if (slurm) report.slurm = slurm_summary(*slurm);
  for (auto& spec : searcher::plan_all_trials(experiment)) {
    std::optional<record::TrialRecord> kept;
    TrialRow row = trial_row(std::move(spec), directory, experiment, search, sources ? &kept : nullptr);
    row.ticket = ticket_of(row.spec.id, search, trial_is_ticket);
    settle_state(row, slurm, experiment.max_restarts, array_tasks);
    if (row.state == "lost") row.system.reset();  // its last sample, from before it was lost: not now
    if (sources) {
      sources->records.push_back(std::move(kept));
      sources->system.emplace_back();
      try {
        sources->system.back() = record::load_system_series(
            store::trial_record_path(directory, row.spec.id).parent_path());
      } catch (const std::exception& e) {
        report.warnings.push_back(fmt::format("trial {}'s system metrics: {}", row.spec.id, e.what()));
      }
    }
    report.states[row.state]++;
    const auto& best_row = report.best_row;
    if (row.best && (!best_row || (smaller ? *row.best < *rows[*best_row].best : *row.best > *rows[*best_row].best))) {
      report.best_row = rows.size();
    }
    rows.push_back(std::move(row));
  }
  // When the searcher judged results, the best trial is its: the best result at the longest
  // length any trial reached (a short ASHA rung is not comparable with a full run).
  if (search) {
    if (auto best = search->best_trial()) {
      const auto found = std::find_if(rows.begin(), rows.end(),
                                      [&](const TrialRow& row) { return row.spec.id == *best; });
      if (found != rows.end()) report.best_row = static_cast<std::size_t>(found - rows.begin());
    }
  }
  report.finished = std::ranges::all_of(rows, [](const TrialRow& row) { return row.ended(); }) ||
                    (search && searcher_done(*search, experiment) &&
                     std::ranges::none_of(rows, [](const TrialRow& row) { return row.state == "running"; }));
  // The searcher column only when the searcher has something to say of some trial (not for
  // single, grid or random without a searcher length: a column of dashes).
  report.searcher_column =
      search && std::ranges::any_of(rows, [](const TrialRow& row) { return !row.searcher.empty(); });
  report.hparam_warnings = hparam_warning_lines(rows);
  if (experiment.container.image_for(experiment.resources.gpus_per_node.value_or(0) > 0)) {
    read_containers(directory, rows, report);
  }
  if (sources) sources->search = std::move(search);
  return report;
}

}  // namespace dlx::cli
