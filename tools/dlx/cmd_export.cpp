// SPDX-License-Identifier: Apache-2.0
// dlx export tensorboard: an experiment's trials as TensorBoard runs (export/ writes the files).
// Reads only (trial.h5 and its metrics logs, experiment.yaml), so any user who can read the
// experiment can export it; the output is written whole or not at all.
#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "dlx/record/system_series.hpp"
#include "dlx/record/trial_record.hpp"
#include "dlx/config/display_text.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/export/export_experiment.hpp"
#include "dlx/store/experiment_layout.hpp"
#include "experiment_locator.hpp"
#include "options.hpp"

namespace dlx::cli {
namespace {

namespace fs = std::filesystem;

CommandLine tensorboard_command_line() {
  namespace po = boost::program_options;
  CommandLine command("export tensorboard", "JOBID|EXPERIMENT_DIR OUTDIR [--force] [--json]",
                      "Writes OUTDIR/trial-<id>/ for every trial that has a trial.h5: its training\n"
                      "and validation metrics as scalars (tags training/<metric>, validation/<metric>,\n"
                      "at each step and wall time) and its hyperparameters and state for TensorBoard's\n"
                      "HParams dashboard; OUTDIR itself gets the experiment's list of hyperparameters\n"
                      "and metrics. Scalars are float32 (TensorBoard's type). OUTDIR must be new or\n"
                      "empty; --force replaces an existing OUTDIR and everything in it. The files are\n"
                      "written beside OUTDIR and moved into place at the end: an error leaves nothing.",
                      "dlx export tensorboard 42 runs/42 && tensorboard --logdir runs/42\n"
                      "dlx export tensorboard /shared/dlx/alice/logreg-grid tb --force --json");
  command.options.add_options()("force", "replace OUTDIR when it exists and is not empty")(
      "json", "print a JSON summary: runs, events, bytes");
  command.operands.add_options()("experiment", po::value<std::string>()->required(), "job id or experiment directory")(
      "output", po::value<std::string>()->required(), "output directory");
  command.positional.add("experiment", 1).add("output", 1);
  return command;
}

CommandLine export_command_line() {
  CommandLine command("export", "tensorboard ARGS...",
                      "An experiment's results in another tool's format. tensorboard: TensorBoard\n"
                      "event files, one run per trial, for `tensorboard --logdir OUTDIR`.",
                      "dlx export tensorboard 42 runs/42");
  command.subcommands = {
      {"tensorboard", "TensorBoard event files: scalars and the HParams dashboard", tensorboard_command_line}};
  return command;
}

// Every trial that has a trial.h5, by id. A trial whose record cannot be read stops the export:
// a TensorBoard view missing a trial would look complete.
std::vector<record::TrialRecord> load_trials(const fs::path& directory) {
  auto ids = store::trial_ids_on_disk(directory);
  std::sort(ids.begin(), ids.end());
  std::vector<record::TrialRecord> trials;
  for (const int id : ids) {
    try {
      const auto path = store::trial_record_path(directory, id);
      auto record = record::load_trial_record_if_exists(path);
      if (!record) continue;  // not started yet
      if (record->trial_id != id) {
        throw Error(fmt::format("{} holds trial {} (copied from another trial's directory? move it back, "
                                "or out of the experiment)", path.string(), record->trial_id));
      }
      trials.push_back(std::move(*record));
    } catch (const Error& e) {
      throw Error(fmt::format("cannot export trial {}: {}", id, e.what()));
    }
  }
  return trials;
}

// OUTDIR is replaced whole with --force, and written into: never the experiment itself, a
// directory holding it, or one inside it.
void refuse_overlap(const fs::path& experiment, const fs::path& output) {
  const auto inside = [](const fs::path& path, const fs::path& ancestor) {
    const auto relative = path.lexically_relative(ancestor);
    return !relative.empty() && *relative.begin() != "..";
  };
  const auto real_experiment = fs::weakly_canonical(experiment);
  const auto real_output = fs::weakly_canonical(output);
  if (inside(real_experiment, real_output) || inside(real_output, real_experiment)) {
    throw Error(fmt::format("OUTDIR {} overlaps the experiment directory {} (choose a directory outside "
                            "the experiment)", output.string(), experiment.string()));
  }
}

int run_tensorboard(const Arguments& arguments) {
  auto values = parse_options(arguments, tensorboard_command_line());
  const auto directory = locate_experiment(values["experiment"].as<std::string>());
  const auto experiment = config::load_snapshot(directory);
  const auto output = tensorboard::output_directory(values["output"].as<std::string>());
  refuse_overlap(directory, output);
  tensorboard::check_output_directory(output, values.count("force") > 0);

  tensorboard::ExperimentToExport request{experiment.name, experiment.searcher.metric, load_trials(directory), {}};
  for (const auto& trial : request.trials) {
    try {
      auto series = record::load_system_series(store::trial_record_path(directory, static_cast<int>(trial.trial_id))
                                                   .parent_path());
      if (!series.empty()) request.system.emplace(trial.trial_id, std::move(series));
    } catch (const Error& e) {
      throw Error(fmt::format("cannot export trial {}'s system metrics: {}", trial.trial_id, e.what()));
    }
  }
  const auto summary = tensorboard::write_tensorboard_logs(request, output, values.count("force") > 0);

  if (values.count("json")) {
    nlohmann::ordered_json json{{"experiment", directory.string()}, {"output", summary.output.string()},
                                {"runs", summary.runs}, {"events", summary.events}, {"bytes", summary.bytes}};
    // Paths are bytes, not always UTF-8: replaced, not a failure after the export succeeded.
    fmt::print("{}\n", json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    const auto shown = config::printable(summary.output.string());
    fmt::print("# experiment {}\n", config::printable(directory.string()));
    fmt::print("wrote {} runs ({} events, {} bytes) to {}\n", summary.runs, summary.events, summary.bytes, shown);
    fmt::print("view them with: tensorboard --logdir {}\n", shown);
  }
  return 0;
}

}  // namespace

int run_export(const Arguments& arguments) {
  const auto command = export_command_line();
  answer_help(arguments, command);
  if (arguments.empty()) throw UsageError("dlx export needs a format: tensorboard", usage_text(command));
  const Arguments rest(arguments.begin() + 1, arguments.end());
  if (arguments.front() == "tensorboard") return run_tensorboard(rest);
  throw UsageError(
      fmt::format("unknown dlx export subcommand '{}' (tensorboard)", config::abbreviated(arguments.front())),
      usage_text(command));
}

}  // namespace dlx::cli
