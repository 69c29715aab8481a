// SPDX-License-Identifier: Apache-2.0
// dlx status: one row per trial of an experiment (status_report.hpp reads them, status_render.hpp
// shows them; --watch shows them again and again: status_watch.hpp).
// Run by the experiment's owner, it also refreshes experiment.h5 when the file is older than the
// journal (trials write it on their commits, but may leave the last few seconds out; see
// summary/include/dlx/summary/experiment_summary.hpp); --write-h5 rewrites it anyway.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "dlx/config/display_text.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/summary/experiment_summary.hpp"
#include "experiment_locator.hpp"
#include "options.hpp"
#include "status_render.hpp"
#include "status_report.hpp"
#include "status_slurm.hpp"
#include "status_watch.hpp"
#include "terminal.hpp"

namespace dlx::cli {

namespace {

constexpr const char* kDefaultWatchSeconds = "2";

bool owned_by_caller(const std::filesystem::path& directory) {
  struct stat info {};
  return ::stat(directory.c_str(), &info) == 0 && info.st_uid == ::geteuid();
}

// experiment.h5 brought up to the journal's end, when it is the caller's to write and stale (or
// `force`). A failure is a warning: the table below comes from the journal itself.
void refresh_summary(const std::filesystem::path& directory, const config::Experiment& experiment, bool force) {
  if (!force && !(owned_by_caller(directory) && summary::summary_stale(directory))) return;
  try {
    summary::rewrite_experiment_summary(directory, experiment, "dlx status");
  } catch (const std::exception& e) {
    fmt::print(stderr, "dlx status: warning: {}\n", config::printable(e.what()));
  }
}

bool is_operand(const std::string& word) { return !word.starts_with("-"); }

// `--watch` takes an optional SECONDS, which Boost only reads as `--watch=SECONDS`. The word after
// `--watch` is its SECONDS when another operand (the job or directory) is also given:
// `dlx status --watch 5 42` and `dlx status 42 --watch 5`, while in `dlx status --watch 42` the
// 42 stays the job.
Arguments join_watch_seconds(Arguments arguments) {
  for (std::size_t i = 0; i + 1 < arguments.size(); ++i) {
    if (arguments[i] == "--") break;
    if (arguments[i] != "--watch" || !is_operand(arguments[i + 1])) continue;
    std::size_t other_operands = 0;
    for (std::size_t j = 0; j < arguments.size(); ++j) {
      if (j != i + 1 && is_operand(arguments[j])) ++other_operands;
    }
    if (other_operands == 0) break;
    arguments[i] = "--watch=" + arguments[i + 1];
    arguments.erase(arguments.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    break;
  }
  return arguments;
}

CommandLine status_command_line() {
  namespace po = boost::program_options;
  CommandLine command("status", "JOBID|EXPERIMENT_DIR [--json] [--write-h5] [--watch [SECONDS]] [--sparklines]",
                      "One row per trial of an experiment, given by its Slurm job id or its directory:\n"
                      "state, hyperparameters, last and best metric and what the searcher decided,\n"
                      "then why failed trials failed and the best trial. Any user who can read the\n"
                      "experiment gets it; for the experiment's owner it also brings experiment.h5 up\n"
                      "to date with the journal. On a wide enough terminal each row ends with a\n"
                      "sparkline of the trial's validation metric.\n"
                      "--watch redraws the table every SECONDS (default 2, from 0.5 to 3600), with a\n"
                      "line of progress (trials ended, each running trial's step of its target, an\n"
                      "estimate of when they reach it), until Ctrl-C or until the experiment has\n"
                      "finished: every trial ended, or the searcher done with the rest paused.\n"
                      "To a file or pipe it writes each table after a line with its time; with\n"
                      "--json, one JSON document per line.",
                      "dlx status 42\n"
                      "dlx status /shared/dlx/alice/logreg-grid --json\n"
                      "dlx status 42 --watch 5\n"
                      "dlx status --watch 10 42 > progress.log");
  command.options.add_options()("json", "print JSON (with --watch: one document per line)")(
      "write-h5", "rewrite experiment.h5 from the journal even when it is up to date")(
      "watch", po::value<std::string>()->implicit_value(kDefaultWatchSeconds)->value_name("SECONDS"),
      "redraw every SECONDS (default 2) until Ctrl-C or every trial has ended")(
      "sparklines", "add the sparkline column even when stdout is not a terminal");
  command.operands.add_options()("experiment", po::value<std::string>()->required(), "job id or experiment directory");
  command.positional.add("experiment", 1);
  return command;
}

}  // namespace

int run_status(const Arguments& arguments) {
  const auto command = status_command_line();
  auto values = parse_options(join_watch_seconds(arguments), command);
  // Checked before the experiment is looked for: a wrong SECONDS is a usage error either way.
  std::optional<double> watch_seconds;
  try {
    if (values.count("watch")) watch_seconds = parse_watch_interval(values["watch"].as<std::string>());
  } catch (const UsageError& e) {
    throw UsageError(e.what(), usage_text(command));
  }

  const auto given = values["experiment"].as<std::string>();
  const auto directory = locate_experiment(given);
  const auto experiment = config::load_snapshot(directory);
  refresh_summary(directory, experiment, values.count("write-h5") > 0);
  const bool json = values.count("json") > 0, sparklines = values.count("sparklines") > 0;
  // Slurm's view of the experiment's array tasks (requeued, launch failed, gone): status_slurm.hpp.
  const auto job = experiment_job(directory, given);

  if (watch_seconds) return watch_status(directory, experiment, {*watch_seconds, json, sparklines, job});

  const auto slurm = job ? std::optional(ask_slurm(*job)) : std::nullopt;
  const auto report = read_status(directory, experiment, nullptr, slurm ? &*slurm : nullptr);
  for (const auto& warning : report.warnings) std::fputs(warning.c_str(), stderr);
  if (json) {
    // Bytes that are not UTF-8 (a stop_reason from a trainer, a crafted trial.h5) become U+FFFD:
    // the output stays JSON (nlohmann's dump would throw on them).
    std::cout << status_json(report, experiment).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
    return 0;
  }
  const bool terminal = stdout_is_terminal();
  std::cout << render_status_table(report, experiment,
                                   {sparklines, terminal ? terminal_columns().value_or(80) : std::optional<std::size_t>()});
  return 0;
}

}  // namespace dlx::cli
