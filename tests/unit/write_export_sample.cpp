// SPDX-License-Identifier: Apache-2.0
// Writes a small experiment directory for the `dlx export tensorboard` test
// (dlx_export_tensorboard_test.py): experiment.yaml and trials of every state, with hyperparameters
// of every type, metrics with gaps (NaN), rows without a wall time (as format-1 records have), and
// a trial directory without trial.h5 (a trial not started yet), and system samples of one trial.
#include <cmath>
#include <exception>
#include <fstream>
#include <iostream>

#include "dlx/record/system_series.hpp"
#include "dlx/record/trial_record.hpp"
#include "dlx/store/experiment_layout.hpp"

namespace {

namespace fs = std::filesystem;
using dlx::record::TrialRecord;

const char* const kExperiment =
    "name: export-sample\nentrypoint: [unused]\nseed: 7\n"
    "hyperparameters:\n  x: {type: double, minval: 0, maxval: 1}\n  y: {type: double, minval: 0, maxval: 1}\n"
    "searcher: {name: async_halving, metric: loss, max_trials: 4, divisor: 2, max_rungs: 3,\n"
    "           max_length: {batches: 32}, stop_once: false}\n";

TrialRecord trial(std::int64_t id, const char* state, nlohmann::ordered_json hparams) {
  TrialRecord record;
  record.experiment = "export-sample";
  record.trial_id = id;
  record.state = state;
  record.hparams = std::move(hparams);
  record.created_unix = 1700000000 + 100 * id;
  record.updated_unix = record.created_unix + 90;
  return record;
}

void save(const fs::path& dir, const TrialRecord& record) {
  const auto path = dlx::store::trial_record_path(dir, static_cast<int>(record.trial_id));
  fs::create_directories(path.parent_path());
  dlx::record::save_trial_record(record, path);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: dlx_write_export_sample EXPERIMENT_DIR\n";
    return 2;
  }
  try {
    const fs::path dir = argv[1];
    fs::create_directories(dir);
    std::ofstream(dir / "experiment.yaml") << kExperiment;
    const double t0 = 1700000000.25;

    auto completed = trial(1, "completed", {{"lr", 0.01}, {"layers", 4}, {"optimizer", "adam"}, {"nesterov", true}});
    completed.training.append(10, {{"loss", 2.5}, {"accuracy", 0.1}}, t0 + 1.5);
    completed.training.append(20, {{"loss", 1.0 / 3.0}}, t0 + 2.75);  // accuracy not reported: NaN
    completed.training.append(30, {{"loss", 0.125}, {"accuracy", 0.9}, {"grad/norm", 1.5}}, t0 + 4.0);  // '/': its own tag
    completed.validation.append(20, {{"loss", 0.7}}, t0 + 3.0);
    completed.validation.append(30, {{"loss", 0.6}, {"top5", 0.99}}, t0 + 4.5);
    save(dir, completed);
    // Its system samples, rank 1 of attempt 0 (created 1700000100): at 1.5, 2.5 and 3.25 s.
    {
      dlx::record::SystemLogWriter system(dlx::store::trial_dir(dir, 1), {"node-b", 1, 0});
      system.append(1700000101.5, {{"memory_bytes", 1048576}, {"processes", 3}});
      system.append(1700000102.5, {{"memory_bytes", 2097152}, {"cpu_percent", 87.5}, {"processes", 3}});
      system.append(1700000103.25, {{"memory_bytes", 2097152}, {"cpu_percent", 12.25}, {"processes", 2},
                                    {"gpu0_util_percent", 97.5}, {"gpu0_memory_bytes", 4194304}});
    }

    // Rows without a wall time, as records of format 1 read back: the export uses updated_unix.
    auto failed = trial(2, "failed", {{"lr", 0.1}, {"layers", 2}, {"optimizer", "sgd"}, {"nesterov", false}});
    failed.training.append(5, {{"loss", 9.75}});
    failed.training.append(6, {{"loss", 1e30}});
    save(dir, failed);

    auto running = trial(3, "running", {{"lr", 1e-5}, {"layers", 8}, {"optimizer", "adam"}, {"nesterov", true}});
    running.training.append(1, {{"loss", 3.14159}}, t0 + 10);
    running.validation.append(1, {{"loss", std::nan("")}}, t0 + 11);  // a row with nothing: no event
    save(dir, running);

    fs::create_directories(dlx::store::trial_dir(dir, 4));  // planned, not started: no trial.h5
  } catch (const std::exception& e) {
    std::cerr << "dlx_write_export_sample: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
