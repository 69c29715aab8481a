// dlx status: one row per trial of an experiment, read from the frozen snapshot (which trials
// exist and their hyperparameters), each trials/<id>/trial.h5 (state and metrics) and the
// searcher's state (journal.snapshot and the journal's tail: search_state below).
// Run by the experiment's owner, it also refreshes experiment.h5 when the file is older than the
// journal (trials write it on their commits, but may leave the last few seconds out; see
// searcher/summary/include/dlx/searcher/experiment_summary.hpp); --write-h5 rewrites it anyway.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <new>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "dlx/config/display_text.hpp"
#include "dlx/checkpoint/trial_record.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/searcher/experiment_summary.hpp"
#include "dlx/searcher/journal_snapshot.hpp"
#include "dlx/searcher/search_state.hpp"
#include "dlx/searcher/trial_plan.hpp"
#include "dlx/store/experiment_layout.hpp"
#include "experiment_locator.hpp"
#include "options.hpp"
#include "table.hpp"

namespace dlx::cli {

namespace {

struct TrialRow {
  searcher::TrialSpec spec;
  std::string state = "pending";
  std::string problem;  // why trial.h5 could not be read
  std::string stop_reason;  // trial.h5's: why a failed trial failed, ...
  std::optional<double> last, best;
  std::string searcher;  // the searcher's word on it: "stopped at 9", "running to 27"
};

// The searcher's state from the journal, when the experiment has one (a TPE or PBT trial's
// hyperparameters exist only there): journal.snapshot and the journal's tail after it, as a new
// trial process catches up (searcher::catch_up), read-only: no exclusive lock, nothing written,
// so any user who can read the directory gets it. A snapshot that does not match is ignored with
// a warning (the whole journal is replayed); the state, and so the table, is the same either
// way. A journal that cannot be read is reported, not fatal; one this dlx's searcher no longer
// reproduces (an older dlx's) is shown with its recorded decisions and a warning.
std::optional<searcher::SearchState> search_state(const std::filesystem::path& directory,
                                                  const config::Experiment& experiment) {
  const auto path = directory / searcher::kJournalFileName;
  if (!std::filesystem::exists(path)) return std::nullopt;
  try {
    searcher::SearchState state(experiment);
    state.keep_recorded_after_mismatch();  // an older dlx's journal: its recorded decisions stand
    const auto caught_up = searcher::catch_up(state, searcher::Journal(path), searcher::journal_snapshot_path(path));
    if (!caught_up.ignored.empty()) fmt::print(stderr, "dlx status: warning: {}\n", config::printable(caught_up.ignored));
    if (!caught_up.corruption.empty()) {
      fmt::print(stderr, "dlx status: warning: {}: {}; the table shows the searcher's state before it\n",
                 config::printable(path.string()), caught_up.corruption);
    }
    if (!state.divergence().empty()) {
      fmt::print(stderr, "dlx status: warning: {}; the table shows the journal's recorded decisions from there on\n",
                 config::printable(state.divergence()));
    }
    return state;
  } catch (const Error& e) {
    fmt::print(stderr, "dlx status: warning: cannot replay {}: {}\n", config::printable(path.string()),
               config::printable(e.what()));
    return std::nullopt;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "dlx status: warning: cannot replay {}: out of memory (is it far larger than usual?)\n",
               config::printable(path.string()));
    return std::nullopt;  } catch (const std::exception&) {  // a library's own words would mean nothing here
    fmt::print(stderr, "dlx status: warning: cannot replay {}: internal error (a dlx bug: please report it)\n",
               config::printable(path.string()));
    return std::nullopt;
  }
}

std::string searcher_summary(const searcher::TrialState& trial) {
  // Without a searcher length (single, grid, random without max_length) a trial trains to its own
  // length and the searcher never hears of it again: it has nothing to say ("to 0" would read as
  // a target, and would stay on completed trials).
  if (trial.status == "running") return trial.target_length > 0 ? fmt::format("to {}", trial.target_length) : "";
  return fmt::format("{} at {}", trial.status, trial.last_length);
}

std::string format_metric(const std::optional<double>& value) {
  return value ? fmt::format("{:.6g}", *value) : "-";
}

bool owned_by_caller(const std::filesystem::path& directory) {
  struct stat info {};
  return ::stat(directory.c_str(), &info) == 0 && info.st_uid == ::geteuid();
}

// experiment.h5 brought up to the journal's end, when it is the caller's to write and stale (or
// `force`). A failure is a warning: the table below comes from the journal itself.
void refresh_summary(const std::filesystem::path& directory, const config::Experiment& experiment, bool force) {
  if (!force && !(owned_by_caller(directory) && searcher::summary_stale(directory))) return;
  try {
    searcher::rewrite_experiment_summary(directory, experiment, "dlx status");
  } catch (const std::exception& e) {
    fmt::print(stderr, "dlx status: warning: {}\n", config::printable(e.what()));
  }
}

CommandLine status_command_line() {
  namespace po = boost::program_options;
  CommandLine command("status", "JOBID|EXPERIMENT_DIR [--json] [--write-h5]",
                      "One row per trial of an experiment, given by its Slurm job id or its directory:\n"
                      "state, hyperparameters, last and best metric and what the searcher decided,\n"
                      "then why failed trials failed and the best trial. Any user who can read the\n"
                      "experiment gets it; for the experiment's owner it also brings experiment.h5 up\n"
                      "to date with the journal.",
                      "dlx status 42\n"
                      "dlx status /shared/dlx/alice/logreg-grid --json");
  command.options.add_options()("json", "print JSON")(
      "write-h5", "rewrite experiment.h5 from the journal even when it is up to date");
  command.operands.add_options()("experiment", po::value<std::string>()->required(), "job id or experiment directory");
  command.positional.add("experiment", 1);
  return command;
}

}  // namespace

int run_status(const Arguments& arguments) {
  auto values = parse_options(arguments, status_command_line());

  const auto directory = locate_experiment(values["experiment"].as<std::string>());
  const auto experiment = config::load_snapshot(directory);
  const auto& metric = experiment.searcher.metric;
  const bool smaller = experiment.searcher.smaller_is_better;
  refresh_summary(directory, experiment, values.count("write-h5") > 0);

  std::vector<TrialRow> rows;
  std::map<std::string, int> states;
  std::optional<std::size_t> best_row;
  const auto search = search_state(directory, experiment);
  for (auto& spec : searcher::plan_all_trials(experiment)) {
    TrialRow row;
    row.spec = std::move(spec);
    if (search) {
      if (auto found = search->trials().find(row.spec.id); found != search->trials().end()) {
        row.spec.hparams = found->second.hparams;
        row.searcher = searcher_summary(found->second);
      }
    }
    try {
      if (auto record = checkpoint::load_trial_record_if_exists(store::trial_record_path(directory, row.spec.id))) {
        row.state = record->state;
        row.last = record->validation.last(metric);
        row.best = record->validation.best(metric, smaller);
        row.stop_reason = record->stop_reason;
      }
    } catch (const std::exception& e) {
      row.state = "unreadable";
      row.problem = e.what();
    }
    states[row.state]++;
    if (row.best && (!best_row || (smaller ? *row.best < *rows[*best_row].best : *row.best > *rows[*best_row].best))) {
      best_row = rows.size();
    }
    rows.push_back(std::move(row));
  }
  // When the searcher judged results, the best trial is its: the best result at the longest
  // length any trial reached (a short ASHA rung is not comparable with a full run).
  if (search) {
    if (auto best = search->best_trial()) {
      const auto found = std::find_if(rows.begin(), rows.end(),
                                      [&](const TrialRow& row) { return row.spec.id == *best; });
      if (found != rows.end()) best_row = static_cast<std::size_t>(found - rows.begin());
    }
  }


  if (values.count("json")) {
    auto out = nlohmann::ordered_json::object();
    out["experiment"] = experiment.name;
    out["directory"] = directory.string();
    out["metric"] = metric;
    out["smaller_is_better"] = smaller;
    out["trials"] = nlohmann::ordered_json::array();
    for (const auto& row : rows) {
      nlohmann::ordered_json item{{"id", row.spec.id}, {"state", row.state}, {"hparams", row.spec.hparams}};
      item["last"] = row.last ? nlohmann::ordered_json(*row.last) : nlohmann::ordered_json();
      item["best"] = row.best ? nlohmann::ordered_json(*row.best) : nlohmann::ordered_json();
      if (!row.searcher.empty()) item["searcher"] = row.searcher;
      if (!row.stop_reason.empty()) item["stop_reason"] = row.stop_reason;
      if (!row.problem.empty()) item["problem"] = row.problem;
      out["trials"].push_back(item);
    }
    out["best_trial"] = best_row ? nlohmann::ordered_json(rows[*best_row].spec.id) : nlohmann::ordered_json();
    // Bytes that are not UTF-8 (a stop_reason from a trainer, a crafted trial.h5) become U+FFFD:
    // the output stays JSON (nlohmann's dump would throw on them).
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }

  // '#' lines and cells are shown through config::printable (table.hpp): hyperparameter values,
  // reasons and paths cannot act on the terminal or add lines.
  fmt::print("# experiment {}  {}\n", config::printable(experiment.name), config::printable(directory.string()));
  fmt::print("# searcher {}, metric {} ({} is better)\n", config::to_string(experiment.searcher.name),
             config::printable(metric),
             smaller ? "smaller" : "larger");
  std::vector<std::string> headers{"trial", "state"};
  for (const auto& hp : experiment.hyperparameters) headers.push_back(hp.name);
  headers.push_back("last " + metric);
  headers.push_back("best " + metric);
  // The searcher column only when the searcher has something to say of some trial (not for
  // single, grid or random without a searcher length: a column of dashes).
  const bool searcher_column =
      search && std::ranges::any_of(rows, [](const TrialRow& row) { return !row.searcher.empty(); });
  if (searcher_column) headers.push_back("searcher");
  Table table(headers);
  for (const auto& row : rows) {
    std::vector<std::string> cells{std::to_string(row.spec.id), row.state};
    for (const auto& hp : experiment.hyperparameters) cells.push_back(format_value(row.spec.hparams[hp.name]));
    cells.push_back(format_metric(row.last));
    cells.push_back(format_metric(row.best));
    if (searcher_column) cells.push_back(row.searcher.empty() ? "-" : row.searcher);
    table.add_row(cells);
  }
  std::cout << table.render();
  for (const auto& row : rows) {
    if (!row.problem.empty()) fmt::print("# trial {}: {}\n", row.spec.id, config::printable(row.problem));
    // Why a trial failed, where a user looks first (the job's output may be gone or overwritten).
    if (row.state == "failed" && !row.stop_reason.empty()) {
      const bool says_failed = row.stop_reason.starts_with("failed");
      fmt::print("# trial {} {}{}\n", row.spec.id, says_failed ? "" : "failed: ", config::printable(row.stop_reason));
    }
  }
  std::string summary;
  for (const auto& [state, count] : states) summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", count, state);
  fmt::print("# {} trials: {}\n", rows.size(), summary);
  if (best_row) {
    fmt::print("# best: trial {} {}={}\n", rows[*best_row].spec.id, config::printable(metric),
               format_metric(rows[*best_row].best));
  }
  return 0;
}

}  // namespace dlx::cli
