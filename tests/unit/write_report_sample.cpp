// SPDX-License-Identifier: Apache-2.0
// Writes experiment directories for the `dlx report` test (dlx_report_test.py) and benchmark
// (bench/report/): `dlx_write_report_sample DIR CASE [TRIALS POINTS]`, CASE one of
//   empty   experiment.yaml only: no trial has started;
//   mixed   a random search without a journal: trials of every state, a trial with no metrics, one
//           not started, NaN and infinite values, a string hyperparameter, hostile text (markup
//           and a script end tag) in hyperparameter values, a metric name (no "/": HDF5 forbids it) and a stop reason, and
//           restarts (a requeue after a notice, a crash, a failure past max_restarts);
//   asha    ASHA with promotions, run ticket by ticket through the real coordinator (a journal
//           with rungs, promotions and stops) and a trial.h5 per trial;
//   pbt     PBT (population 4, 3 rounds) through the coordinator: trials start from their
//           parents' checkpoints (exploits and continues);
//   big     TRIALS trials (random search) of POINTS training and validation rows each.
// mixed and asha carry a code snapshot's record (code.json, store/code_info.hpp): mixed's from
// uncommitted changes ("dirty"), asha's from a clean commit.
#include <cmath>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include "dlx/record/system_series.hpp"
#include "dlx/record/trial_record.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/store/code_info.hpp"
#include "dlx/store/experiment_layout.hpp"

namespace {

namespace fs = std::filesystem;
using dlx::record::TrialRecord;

constexpr std::int64_t kStart = 1700000000;
constexpr const char* kHostile = "<img src=x onerror=\"window.dlxInjected=1\"></script><script>window.dlxInjected=1</script>";

TrialRecord trial(const std::string& experiment, std::int64_t id, const char* state, nlohmann::ordered_json hparams) {
  TrialRecord record;
  record.experiment = experiment;
  record.trial_id = id;
  record.state = state;
  record.hparams = std::move(hparams);
  record.created_unix = kStart + 60 * id;
  record.updated_unix = record.created_unix + 600;
  record.world_size = 2;
  record.nodes = fmt::format("n{},n{}", id % 3 + 1, id % 3 + 1);
  record.slurm_job_id = fmt::format("4242_{}", id);
  return record;
}

void save(const fs::path& dir, const TrialRecord& record) {
  const auto path = dlx::store::trial_record_path(dir, static_cast<int>(record.trial_id));
  fs::create_directories(path.parent_path());
  dlx::record::save_trial_record(record, path);
}

// A learning curve: loss falling from `top` towards `floor` over about `tau` steps, with a little
// deterministic noise.
double loss_at(std::int64_t step, double floor, double top, std::int64_t id, double tau) {
  const double noise = 0.02 * std::sin(static_cast<double>(step * 7 + id * 13));
  return floor + (top - floor) * std::exp(-static_cast<double>(step) / tau) + noise;
}

// Rows `from` to `to`, reported `seconds_per_step` apart from `start` (default: the trial's creation).
void curve(TrialRecord& record, std::int64_t from, std::int64_t to, double floor, double tau,
           std::int64_t every_validation = 10, std::optional<double> start = std::nullopt,
           double seconds_per_step = 0.05) {
  for (std::int64_t step = from; step <= to; ++step) {
    const double time = start ? *start + seconds_per_step * static_cast<double>(step - from)
                              : static_cast<double>(record.created_unix) + seconds_per_step * static_cast<double>(step);
    const double loss = loss_at(step, floor, 2.0, record.trial_id, tau);
    record.training.append(step, {{"loss", loss}}, time);
    if (step % every_validation == 0) {
      record.validation.append(step, {{"loss", loss + 0.05}, {"accuracy", 1.0 - loss / 2.5}}, time);
    }
  }
}

void write_yaml(const fs::path& dir, const std::string& text) {
  fs::create_directories(dir);
  std::ofstream(dir / "experiment.yaml") << text;
}

// code.json as the submission writes it, for a snapshot of `commit` on main.
void write_code_info(const fs::path& dir, const std::string& commit, bool dirty) {
  dlx::store::CodePlan plan;
  plan.root = "/home/researcher/project";
  plan.git = dlx::store::GitState{commit, "main", "https://git.example/project.git", dirty ? " M train.py\n" : "",
                                  "", dirty};
  plan.files.push_back({"train.py", 120, false});
  plan.bytes = 120;
  std::ofstream(dir / dlx::store::kCodeInfoFileName) << dlx::store::code_info_json(plan, 120, 0.05).dump(2) << "\n";
}

constexpr const char kRandom[] =
    "name: {}\nentrypoint: [unused]\nseed: 7\n"
    "hyperparameters:\n  lr: {{type: log, minval: -4, maxval: -1}}\n  layers: {{type: int, minval: 1, maxval: 8}}\n"
    "  optimizer: {{type: categorical, vals: [adam, sgd, '<b>bold</b>']}}\n"
    "searcher: {{name: random, metric: loss, max_trials: {}, max_length: {{batches: 100}}}}\n";

void mixed(const fs::path& dir) {
  write_yaml(dir, fmt::format(kRandom, "report-mixed", 12));
  const std::string name = "report-mixed";
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (int id = 0; id < 10; ++id) {
    const char* optimizer = id % 3 == 0 ? "adam" : id % 3 == 1 ? "sgd" : kHostile;
    auto record = trial(name, id, id == 4 ? "failed" : id == 9 ? "running" : "completed",
                        {{"lr", std::pow(10.0, -4 + 0.3 * id)}, {"layers", 1 + id % 8}, {"optimizer", optimizer}});
    if (id == 3) {  // no metrics at all
      save(dir, record);
      continue;
    }
    curve(record, 1, 400, 0.1 + 0.03 * id, 60.0 + 10 * id);
    if (id == 5) {  // NaN and infinite values, and a metric named with markup
      record.training.append(401, {{"loss", inf}}, nan);
      record.training.append(402, {{"loss", nan}, {"<i>grad<script>", 1.5}}, nan);
      record.validation.append(410, {{"loss", -inf}}, nan);
    }
    if (id == 6) {  // requeued after a notice, then a crash
      record.restarts = 2;
      record.failures = 1;
      record.restart_events.push_back({"preemption", "requeue: checkpoint at step 100 after SIGUSR2",
                                       record.created_unix + 200, 100, 0, 0, 30, "n1,n2"});
      record.restart_events.push_back({"crash", "crash: exit 3; restart 1 of max_restarts 5", record.created_unix + 400,
                                       300, 20, 45.5, 12, "n2,n3"});
      record.updated_unix = record.created_unix + 700;
    }
    if (id == 4) {
      record.failures = 6;
      record.restarts = 6;
      record.exit_code = 137;
      record.stop_reason = std::string("failed: crash 6 is past max_restarts 5; last error: ") + kHostile;
      record.restart_events.push_back({"crash", "crash: exit 137 (signal 9)", record.created_unix + 100, 0, 50, 80, 5, ""});
    }
    save(dir, record);
  }
  fs::create_directories(dlx::store::trial_dir(dir, 10));  // trial 10 planned, not started; 11 neither
  write_code_info(dir, "0123456789abcdef0123456789abcdef01234567", true);
  // System samples: trial 6 on two ranks, rank 1 nearly idle (a finding); trial 7 on one rank,
  // with the most memory (a finding); trial 9, running, on one rank with two GPUs. 60 samples a
  // second apart.
  const double start = 1700000000;
  for (const auto& [id, rank, node, cpu, memory] :
       {std::tuple{6, 0, "n1", 95.0, 300.0}, std::tuple{6, 1, "n2", 12.0, 280.0}, std::tuple{7, 0, "n3", 60.0, 900.0},
        std::tuple{9, 0, "n4", 50.0, 100.0}}) {
    dlx::record::SystemLogWriter writer(dlx::store::trial_dir(dir, id), {node, rank, 0});
    for (int i = 0; i < 60; ++i) {
      std::map<std::string, double> values{{"memory_bytes", memory * 1048576 * (0.5 + i / 120.0)}};
      if (i > 0) values["cpu_percent"] = cpu + (i % 5);
      // Trial 6's rank 0 has a GPU, idle 3 samples in 5 while its CPU is saturated (a finding).
      if (id == 6 && rank == 0 && i > 0) {
        values["gpu0_util_percent"] = i % 5 < 3 ? 4 : 92;
        values["gpu0_memory_bytes"] = 6e9;
      }
      // Trial 9 (running: dlx status shows its last sample) has two GPUs kept busy.
      if (id == 9 && i > 0) {
        values["gpu0_util_percent"] = 80;
        values["gpu1_util_percent"] = 60;
        values["gpu0_memory_bytes"] = 3e9;
        values["gpu1_memory_bytes"] = 1e9;
      }
      writer.append(start + i, values);
    }
  }
}

// Runs the experiment's search ticket by ticket through the coordinator, as dlx-launch and libdlx
// would, writing each trial's trial.h5 (metrics from its start to its target at each turn).
void search(const fs::path& dir, int tickets) {
  const auto experiment = dlx::config::load_snapshot(dir);
  dlx::searcher::Coordinator coordinator(experiment, dir / "journal");
  std::map<int, TrialRecord> records;
  std::int64_t clock = kStart;
  for (int ticket = 0; ticket < tickets; ++ticket) {
    const auto work = coordinator.request_work(ticket);
    if (work.kind != dlx::searcher::Work::Kind::train) continue;
    auto found = records.find(work.trial);
    if (found == records.end()) {
      auto record = trial(experiment.name, work.trial, "running", work.hparams);
      record.created_unix = clock;
      if (work.checkpoint_trial && *work.checkpoint_trial != work.trial) {
        record.started_from = dlx::record::StartCheckpoint{*work.checkpoint_trial, work.start_length,
                                                               fmt::format("trials/{}/checkpoints/step-{}.h5",
                                                                           *work.checkpoint_trial, work.start_length)};
      }
      found = records.emplace(work.trial, std::move(record)).first;
    }
    auto& record = found->second;
    const double floor = 0.05 + 0.04 * static_cast<double>((work.trial * 37) % 17);
    const double tau = 12.0 + 6.0 * static_cast<double>(work.trial % 7);
    for (std::int64_t target = work.target_length, from = work.start_length + 1;;) {
      // Each turn takes a second per step on the simulated clock.
      curve(record, from, target, floor, tau, 5, static_cast<double>(clock), 1.0);
      clock += target - from + 1;
      const double metric = loss_at(target, floor, 2.0, record.trial_id, tau) + 0.05;
      const auto decision = coordinator.report_validation(work.trial, target, metric);
      if (decision.kind == dlx::searcher::Decision::Kind::continue_training) {
        from = target + 1;
        target = decision.target_length;
        continue;
      }
      using Kind = dlx::searcher::Decision::Kind;
      const auto how = decision.kind == Kind::pause ? dlx::searcher::ExitKind::paused
                       : decision.kind == Kind::stop ? dlx::searcher::ExitKind::stopped
                                                     : dlx::searcher::ExitKind::completed;
      // What libdlx's finish() records (launcher/sdk/src/trial.cpp).
      record.state = decision.kind == Kind::pause ? "paused" : decision.kind == Kind::stop ? "stopped" : "completed";
      record.updated_unix = clock;
      save(dir, record);
      coordinator.report_exit(work.trial, how, "");
      break;
    }
  }
}

void big(const fs::path& dir, int trials, int points) {
  write_yaml(dir, fmt::format(kRandom, "report-big", trials));
  for (int id = 0; id < trials; ++id) {
    auto record = trial("report-big", id, "completed",
                        {{"lr", std::pow(10.0, -4 + 3.0 * (id % 97) / 97.0)}, {"layers", 1 + id % 8},
                         {"optimizer", id % 2 ? "adam" : "sgd"}});
    curve(record, 1, points, 0.1 + 0.001 * (id % 300), points / 5.0 + id % 50, 1);
    save(dir, record);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: dlx_write_report_sample DIR empty|mixed|asha|pbt|big [TRIALS POINTS]\n";
    return 2;
  }
  try {
    const fs::path dir = argv[1];
    const std::string which = argv[2];
    if (which == "empty") {
      write_yaml(dir, fmt::format(kRandom, "report-empty", 4));
    } else if (which == "mixed") {
      mixed(dir);
    } else if (which == "asha") {
      write_yaml(dir, "name: report-asha\nentrypoint: [unused]\nseed: 11\n"
                      "hyperparameters:\n  lr: {type: log, minval: -4, maxval: -1}\n"
                      "  width: {type: int, minval: 8, maxval: 256}\n"
                      "  act: {type: categorical, vals: [relu, tanh, gelu]}\n"
                      "searcher: {name: async_halving, metric: loss, max_trials: 24, divisor: 3, max_rungs: 3,\n"
                      "           max_length: {batches: 90}, stop_once: false}\n");
      search(dir, dlx::searcher::ticket_count(dlx::config::load_snapshot(dir)));
      write_code_info(dir, "fedcba9876543210fedcba9876543210fedcba98", false);
    } else if (which == "pbt") {
      write_yaml(dir, "name: report-pbt\nentrypoint: [unused]\nseed: 5\n"
                      "hyperparameters:\n  lr: {type: log, minval: -4, maxval: -1}\n"
                      "  momentum: {type: double, minval: 0.5, maxval: 0.99}\n"
                      "searcher: {name: pbt, metric: loss, population_size: 4, num_rounds: 3,\n"
                      "           length_per_round: {batches: 40}, replace_function: {truncate_fraction: 0.25},\n"
                      "           explore_function: {resample_probability: 0.2, perturb_factor: 0.2}}\n");
      search(dir, dlx::searcher::ticket_count(dlx::config::load_snapshot(dir)));
    } else if (which == "big" && argc == 5) {
      big(dir, std::atoi(argv[3]), std::atoi(argv[4]));
    } else {
      std::cerr << "dlx_write_report_sample: unknown case " << which << "\n";
      return 2;
    }
  } catch (const std::exception& e) {
    std::cerr << "dlx_write_report_sample: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
