// SPDX-License-Identifier: Apache-2.0
// dlx replay: rebuilds the searcher's state from the experiment journal and prints every decision
// with its reason. The rebuild runs the same code as the live searcher (searcher/search_state.hpp)
// and checks each recorded answer against the method's, so a clean replay shows that the
// decisions are a deterministic function of the journal. Exit status: 0 clean, 1 when the journal
// is corrupt or an answer differs, or experiment.h5 could not be written.
// It reads the whole journal and never journal.snapshot (unlike dlx status and dlx ckpt):
// checking every recorded answer and printing every decision needs every record.
// --write-h5 (re)writes experiment.h5 from the whole journal, under the journal's lock, so it is
// safe while trials run; the experiment's owner runs it (the directory is theirs).
#include <filesystem>
#include <iostream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "dlx/config/display_text.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/summary/experiment_summary.hpp"
#include "dlx/searcher/search_state.hpp"
#include "experiment_locator.hpp"
#include "options.hpp"
#include "table.hpp"

namespace dlx::cli {

namespace {

std::string metric_text(const std::optional<double>& metric) {
  return metric ? fmt::format("{:.6g}", *metric) : "-";
}

nlohmann::ordered_json entry_json(const searcher::DecisionEntry& entry) {
  nlohmann::ordered_json item{{"offset", entry.offset}, {"type", entry.type}};
  item["ticket"] = entry.ticket ? nlohmann::ordered_json(*entry.ticket) : nlohmann::ordered_json();
  item["trial"] = entry.trial;
  item["length"] = entry.length;
  item["metric"] = entry.metric ? nlohmann::ordered_json(*entry.metric) : nlohmann::ordered_json();
  item["action"] = entry.action;
  item["target_length"] = entry.target_length;
  item["reason"] = entry.reason;
  item["unix"] = entry.unix_seconds;
  return item;
}

CommandLine replay_command_line() {
  namespace po = boost::program_options;
  CommandLine command("replay", "JOBID|EXPERIMENT_DIR [--json] [--state] [--write-h5]",
                      "The searcher's decisions rebuilt from the experiment journal, each with its\n"
                      "reason, by the same code as the live searcher, which checks every recorded\n"
                      "answer against its own. Exit status 0 when the journal replays cleanly, 1 when\n"
                      "it is corrupt or an answer differs (the decisions from there on are shown as\n"
                      "recorded), or experiment.h5 could not be written.",
                      "dlx replay 42\n"
                      "dlx replay 42 --state");
  command.options.add_options()("json", "print JSON")(
      "state", "print the rebuilt searcher state (JSON) instead of the decisions")(
      "write-h5", "also (re)write experiment.h5 from the journal (under its lock; the owner's)");
  command.operands.add_options()("experiment", po::value<std::string>()->required(), "job id or experiment directory");
  command.positional.add("experiment", 1);
  return command;
}

void print_decisions_json(const config::Experiment& experiment, const std::filesystem::path& path,
                          const searcher::JournalScan& scan, const searcher::SearchState& state,
                          const std::string& mismatch) {
  nlohmann::ordered_json out{{"experiment", experiment.name}, {"journal", path.string()},
                             {"records", scan.records.size()}, {"torn_tail", scan.torn_tail}};
  out["decisions"] = nlohmann::ordered_json::array();
  for (const auto& entry : state.decisions()) out["decisions"].push_back(entry_json(entry));
  const auto best = state.best_trial();
  out["best_trial"] = best ? nlohmann::ordered_json(*best) : nlohmann::ordered_json();
  out["mismatch"] = mismatch.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(mismatch);
  std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

// '#' lines and cells are shown through config::printable (table.hpp): reasons and paths cannot
// act on the terminal or add lines.
void print_decisions_table(const config::Experiment& experiment, const std::filesystem::path& path,
                           const searcher::JournalScan& scan, const searcher::SearchState& state) {
  fmt::print("# experiment {}  journal {}: {} records{}\n", config::printable(experiment.name),
             config::printable(path.string()),
             scan.records.size(), scan.torn_tail ? " (a torn tail from a killed writer: ignored)" : "");
  fmt::print("# searcher {}, metric {} ({} is better)\n", config::to_string(experiment.searcher.name),
             config::printable(experiment.searcher.metric), experiment.searcher.smaller_is_better ? "smaller" : "larger");
  Table table({"event", "ticket", "trial", "length", experiment.searcher.metric, "action", "target", "reason"});
  for (const auto& entry : state.decisions()) {
    table.add_row({entry.type, entry.ticket ? std::to_string(*entry.ticket) : "-",
                   std::to_string(entry.trial), std::to_string(entry.length), metric_text(entry.metric),
                   entry.action, entry.target_length ? std::to_string(entry.target_length) : "-",
                   entry.reason});
  }
  std::cout << table.render();
  if (auto best = state.best_trial()) {
    const auto& trial = state.trials().at(*best);
    fmt::print("# best: trial {} {}={} at length {}\n", *best, config::printable(experiment.searcher.metric),
               metric_text(trial.last_metric), trial.last_length);
  }
}

// --write-h5: experiment.h5 from the journal that replayed cleanly. False (said) when it fails.
bool write_summary(const std::filesystem::path& directory, const config::Experiment& experiment) {
  try {
    summary::rewrite_experiment_summary(directory, experiment, "dlx replay --write-h5");
    // On stderr: stdout stays the decisions (or JSON) alone.
    fmt::print(stderr, "dlx replay: wrote {}\n", (directory / summary::kExperimentSummaryFileName).string());
    return true;
  } catch (const std::exception& e) {
    fmt::print(stderr, "dlx replay: {}\n", config::printable(e.what()));
    return false;
  }
}

}  // namespace

int run_replay(const Arguments& arguments) {
  auto values = parse_options(arguments, replay_command_line());

  const auto directory = locate_experiment(values["experiment"].as<std::string>());
  const auto experiment = config::load_snapshot(directory);
  const auto path = directory / searcher::kJournalFileName;
  const auto scan = searcher::Journal(path).read();
  if (!scan.corruption.empty()) {
    fmt::print(stderr, "dlx replay: {}: {} (the records before it are intact; move the file aside "
               "to inspect it)\n", config::printable(path.string()), scan.corruption);
    return 1;
  }
  // A journal this dlx's searcher no longer reproduces (an older dlx wrote it, or
  // experiment.yaml changed) is still shown whole: from the first differing answer on, the
  // journal's recorded decisions are printed as they are, and the exit status says so.
  searcher::SearchState state(experiment);
  state.keep_recorded_after_mismatch();
  try {
    for (const auto& record : scan.records) state.apply(record);
  } catch (const searcher::JournalError& e) {  // a malformed record: its offset and what is wrong
    fmt::print(stderr, "dlx replay: {}: {} (the records before it are intact; move the file aside to inspect it)\n",
               config::printable(path.string()), config::printable(e.what()));
    return 1;
  }
  const std::string mismatch = state.divergence();
  if (values.count("state")) {
    std::cout << state.to_json().dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else if (values.count("json")) {
    print_decisions_json(experiment, path, scan, state, mismatch);
  } else {
    print_decisions_table(experiment, path, scan, state);
  }
  if (!mismatch.empty()) {
    fmt::print(stderr, "dlx replay: {}. The decisions from that record on are the journal's as recorded, not "
               "re-derived{}\n", config::printable(mismatch), values.count("state") ? "; the method's snapshot in the state above is where it diverged" : "");
    if (values.count("write-h5")) fmt::print(stderr, "dlx replay: experiment.h5 not written: the journal does not replay\n");
    return 1;
  }
  if (values.count("write-h5") && !write_summary(directory, experiment)) return 1;
  return 0;
}

}  // namespace dlx::cli
