// SPDX-License-Identifier: Apache-2.0
// dlx report: an experiment as one self-contained HTML page (tools/dlx/report/: the data model,
// the page, the file). Reads only, like dlx status (status_report.hpp), so any user who can read
// the experiment can make its report; --watch rewrites the page until the experiment ends.

#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "dlx/config/display_text.hpp"
#include "dlx/config/parse.hpp"
#include "experiment_locator.hpp"
#include "options.hpp"
#include "report/report_file.hpp"
#include "report/report_model.hpp"
#include "report/report_page.hpp"
#include "status_report.hpp"
#include "status_sources.hpp"
#include "status_slurm.hpp"
#include "status_watch.hpp"
#include "stop_signals.hpp"
#include "table.hpp"

namespace dlx::cli {
namespace {

namespace fs = std::filesystem;

CommandLine report_command_line() {
  namespace po = boost::program_options;
  CommandLine command("report", "JOBID|EXPERIMENT_DIR [-o FILE.html] [--watch SECONDS] [--json]",
                      "One self-contained HTML file to open in any browser (no server, no network,\n"
                      "nothing else to copy): learning curves of every trial, the best value so far,\n"
                      "a sortable and filterable trial table, parallel coordinates, the metric against\n"
                      "each hyperparameter and their importance, the searcher's story (ASHA rungs, PBT\n"
                      "lineage) and each trial's attempts, restarts and time lost. Curves are cut down\n"
                      "to what a screen shows (the lowest and highest value of each stretch kept).\n"
                      "--watch rewrites the file every SECONDS (0.5 to 3600) until the experiment has\n"
                      "ended (every trial completed or failed, or the searcher done) or Ctrl-C; the\n"
                      "page reloads itself meanwhile. The file is replaced atomically: a reader\n"
                      "never sees half of it.",
                      "dlx report 42 -o report.html\n"
                      "dlx report /shared/dlx/alice/logreg-grid --watch 30 -o ~/public_html/grid.html");
  command.options.add_options()("output,o", po::value<std::string>()->default_value("report.html")->value_name("FILE"),
                                "the HTML file to write")(
      "watch", po::value<std::string>()->value_name("SECONDS"), "rewrite every SECONDS until the experiment ends")(
      "json", "print a JSON summary: path, trials, bytes");
  command.operands.add_options()("experiment", po::value<std::string>()->required(), "job id or experiment directory");
  command.positional.add("experiment", 1);
  return command;
}

struct Written {
  std::size_t trials = 0;
  std::size_t bytes = 0;
  bool ended = false;
};

// One page of the experiment as it is now. A trial.h5 or metrics log of a newer format stops it
// (upgrade dlx: the page would silently lack that trial; the readers' messages say "newer than"
// and what to do, and the test pins them); other unreadable trials are warnings and shown as such.
Written write_once(const fs::path& directory, const config::Experiment& experiment, const fs::path& output,
                   std::optional<double> refresh, bool print_warnings, const std::optional<std::string>& job) {
  StatusSources sources;
  // Slurm's view of the array tasks, as dlx status shows it (status_slurm.hpp).
  const auto slurm = job ? std::optional(ask_slurm(*job)) : std::nullopt;
  const auto status = read_status(directory, experiment, &sources, slurm ? &*slurm : nullptr);
  for (const auto& row : status.rows) {
    if (row.state == "unreadable" && row.problem.find(" newer than ") != std::string::npos) {
      throw Error(fmt::format("trial {}: {}", row.spec.id, row.problem));
    }
    if (row.state == "unreadable" && print_warnings) {
      fmt::print(stderr, "dlx report: warning: trial {} is shown without its record: {}\n", row.spec.id,
                 config::printable(row.problem));
    }
  }
  if (print_warnings) {
    // read_status words them for dlx status.
    for (auto warning : status.warnings) {
      if (warning.starts_with("dlx status: ")) warning.replace(0, 10, "dlx report");
      fmt::print(stderr, "{}", warning);
    }
  }
  report::ModelOptions options;
  options.now_unix = static_cast<std::int64_t>(std::time(nullptr));
  options.watch_seconds = refresh;
  const auto model = report::report_model(experiment, status, sources, options);
  const bool ended = model["meta"]["ended"].get<bool>();
  const auto page = report::render_page(model, ended ? std::nullopt : refresh);
  report::write_report_file(output, page);
  return {status.rows.size(), page.size(), ended};
}

void print_summary(const fs::path& directory, const fs::path& output, const Written& written, bool json,
                   std::size_t writes) {
  if (json) {
    nlohmann::ordered_json summary{{"experiment", directory.string()}, {"path", output.string()},
                                   {"trials", written.trials}, {"bytes", written.bytes},
                                   {"ended", written.ended}, {"writes", writes}};
    std::cout << summary.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  fmt::print("# experiment {}\n", config::printable(directory.string()));
  fmt::print("wrote {} ({}, {} bytes)\n", config::printable(output.string()),
             counted(static_cast<std::int64_t>(written.trials), "trial"), written.bytes);
  fmt::print("open it in a browser: file://{}\n", config::printable(output.string()));
}

int watch(const fs::path& directory, const config::Experiment& experiment, const fs::path& output, double seconds,
          bool json, const std::optional<std::string>& job) {
  const StopSignals signals;
  std::size_t writes = 0;
  Written written;
  while (true) {
    written = write_once(directory, experiment, output, seconds, writes == 0, job);
    ++writes;
    if (!json) {
      fmt::print("# {:%Y-%m-%d %H:%M:%S} UTC wrote {} ({}, {} bytes){}\n", fmt::gmtime(std::time(nullptr)),
                 config::printable(output.string()), counted(static_cast<std::int64_t>(written.trials), "trial"),
                 written.bytes, written.ended ? ": the experiment has ended" : "");
      std::fflush(stdout);
    }
    if (written.ended) break;
    sleep_unless_stopped(std::chrono::duration<double>(seconds));
    if (StopSignals::requested()) {
      // The last page stops reloading itself: nobody rewrites it any more.
      written = write_once(directory, experiment, output, std::nullopt, false, job);
      ++writes;
      break;
    }
  }
  print_summary(directory, output, written, json, writes);
  return 0;
}

}  // namespace

int run_report(const Arguments& arguments) {
  const auto command = report_command_line();
  auto values = parse_options(arguments, command);
  std::optional<double> watch_seconds;
  try {
    if (values.count("watch")) watch_seconds = parse_watch_interval(values["watch"].as<std::string>());
  } catch (const UsageError& e) {
    throw UsageError(e.what(), usage_text(command));
  }
  const auto output = fs::absolute(values["output"].as<std::string>());
  report::check_output_path(output);  // before any reading: a wrong -o fails at once
  const auto given = values["experiment"].as<std::string>();
  const auto directory = locate_experiment(given);
  const auto experiment = config::load_snapshot(directory);
  const bool json = values.count("json") > 0;
  const auto job = experiment_job(directory, given);
  if (watch_seconds) return watch(directory, experiment, output, *watch_seconds, json, job);
  const auto written = write_once(directory, experiment, output, std::nullopt, true, job);
  print_summary(directory, output, written, json, 1);
  return 0;
}

}  // namespace dlx::cli
