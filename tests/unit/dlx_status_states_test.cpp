// SPDX-License-Identifier: Apache-2.0
// `dlx status` tells the truth (issue 32): what a trial is doing from its trial.h5 and, when Slurm
// was asked, from its array task (tools/dlx/status/trial_status.hpp, table-driven); the trials'
// hyperparameter name warnings merged under the table (hparam_warnings.hpp); and through the real
// dlx binary, the table's states, the lines under it, "failed at" the trial's real last step, and
// the same in --json.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlx/config/parse.hpp"
#include "dlx/record/trial_record.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "hparam_warnings.hpp"
#include "run_program.hpp"
#include "searcher_temp_dir.hpp"
#include "status_report.hpp"
#include "trial_status.hpp"

using namespace dlx;
using namespace dlx::cli;
namespace fs = std::filesystem;
using dlx::testing::spit;
using dlx::testing::TempDir;

namespace {

dlx::testing::ProgramOutput run_dlx(const std::vector<std::string>& args) {
  TempDir capture;
  std::vector<std::string> argv{DLX_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return dlx::testing::run_program(argv, capture.path);
}

SlurmView view(std::map<int, SlurmTask> tasks) {
  SlurmView slurm;
  slurm.job_id = "42";
  slurm.tasks = std::move(tasks);
  slurm.output = "/home/alice/out/none/%A_%a.out";
  return slurm;
}

}  // namespace

TEST_CASE("dlx status: a trial's state from its record and its array task", "[cli][status]") {
  const RecordFacts none{}, running{"running", "", 0, 0};
  const RecordFacts crashed{"running", "crash: exit 1: ValueError: x; restart 1 of max_restarts 5", 1, 1};
  const RecordFacts looping{"running", "crash: exit 1: ValueError: x; restart 2 of max_restarts 5", 2, 2};
  const RecordFacts requeued{"running", "requeue: checkpoint at step 24 after SIGUSR2", 0, 0};
  const SlurmTask pending{"PENDING", "BeginTime", 1}, queued{"PENDING", "JobArrayTaskLimit", 0};
  const SlurmTask active{"RUNNING", "None", 0}, held{"PENDING", "launch_failed_requeued_held", 1};
  const SlurmTask done{"COMPLETED", "None", 0}, killed{"CANCELLED", "None", 0};
  const auto slurm = view({});
  SlurmView gone = view({});
  gone.gone = true;
  struct Row {
    const char* what;
    RecordFacts record;
    const SlurmTask* task;
    const SlurmView* slurm;
    std::string state, note, detail;  // detail: a part of it
  };
  const std::vector<Row> rows{
      {"no record, queued", none, &queued, &slurm, "pending", "", ""},
      {"no record, Slurm not asked", none, nullptr, nullptr, "pending", "", ""},
      {"no record, held after a failed launch", none, &held, &slurm, "launch failed", "",
       "launch failed: Slurm: PENDING (launch_failed_requeued_held): Slurm could not start the batch script (can it "
       "write its output file /home/alice/out/none/%A_%a.out?)"},
      {"no record, the task runs", none, &active, &slurm, "starting", "", ""},
      {"no record, the job gone", none, nullptr, &gone, "not started", "", "Slurm no longer knows job 42"},
      {"running", running, &active, &slurm, "running", "", ""},
      {"running, record alone", running, nullptr, nullptr, "running", "", ""},
      {"crashed, record alone", crashed, nullptr, nullptr, "restarting", "1 of 5",
       "restarting: crash: exit 1: ValueError: x; restart 1 of max_restarts 5"},
      {"crashed, pending", crashed, &pending, &slurm, "restarting", "1 of 5", "; Slurm: PENDING (BeginTime)"},
      {"the same crash twice", looping, &pending, &slurm, "crash-looping", "2 of 5", "crash-looping: crash: exit 1"},
      {"requeued after a notice", requeued, &pending, &slurm, "requeued", "",
       "requeued: requeue: checkpoint at step 24 after SIGUSR2; Slurm: PENDING (BeginTime)"},
      {"pending again without a recorded reason", running, &pending, &slurm, "requeued", "",
       "requeued without recording why (killed, or its node lost); Slurm: PENDING (BeginTime)"},
      {"running, its task ended", running, &done, &slurm, "lost", "",
       "its array task in job 42 ended (COMPLETED): no run will continue it (its trainer exited without calling "
       "finish();"},
      {"running, its task killed", running, &killed, &slurm, "lost", "",
       "its array task in job 42 ended (CANCELLED): no run will continue it (killed, or its node lost;"},
      {"running, the job gone", running, nullptr, &gone, "lost", "", "Slurm no longer knows job 42"},
      {"completed", {"completed", "", 0, 0}, nullptr, &gone, "completed", "", ""},
      {"restarted after a crash, running again", {"running", "", 1, 1}, &active, &slurm, "running", "restart 1 of 5",
       ""},
  };
  for (const auto& row : rows) {
    INFO(row.what);
    const auto shown = trial_status(row.record, row.task, row.slurm, 5);
    CHECK(shown.state == row.state);
    CHECK(shown.note == row.note);
    if (row.detail.empty()) CHECK(shown.detail.empty());
    else CHECK_THAT(shown.detail, Catch::Contains(row.detail));
  }
}

TEST_CASE("dlx status: a trial its ended task never started says where to look", "[cli][status]") {
  const RecordFacts none{};
  const SlurmTask failed{"FAILED", "NonZeroExitCode", 0}, done{"COMPLETED", "None", 0}, killed{"CANCELLED", "None", 0};
  const auto slurm = view({});
  const std::optional<bool> no_log = false, logged = true, unknown = std::nullopt;
  const std::string ended = "not started: its array task in job 42 ended ";
  const std::string ask = ", and dlx-launch kept no log of the trial: does the job script run the trainer through "
                          "`srun dlx-launch` (examples/job.sh), not by itself? `dlx logs 42 TRIAL` shows what the task "
                          "printed";
  // The job script ran without dlx-launch taking the trial on (`python3 train.py` by itself).
  CHECK(trial_status(none, &failed, &slurm, 5, no_log).detail == ended + "(FAILED)" + ask);
  CHECK(trial_status(none, &done, &slurm, 5, no_log).detail == ended + "(COMPLETED)" + ask);
  // dlx-launch took it on; the trainer never opened it.
  CHECK(trial_status(none, &failed, &slurm, 5, logged).detail ==
        ended + "(FAILED) before its trainer opened the trial (`dlx logs 42 TRIAL` shows why)");
  // Cancelled before it ran, or a task of several tickets (no log says nothing): the end alone.
  CHECK(trial_status(none, &killed, &slurm, 5, no_log).detail == ended + "(CANCELLED)");
  CHECK(trial_status(none, &failed, &slurm, 5, unknown).detail == ended + "(FAILED)");
  CHECK(trial_status(none, &failed, &slurm, 5).detail == ended + "(FAILED)");
  CHECK(trial_status(none, &failed, &slurm, 5, no_log).state == "not started");
}

TEST_CASE("dlx status: hyperparameter warnings merged across trials", "[cli][status]") {
  const auto row = [](int id, const char* state, std::vector<record::HparamWarning> warnings) {
    TrialRow trial;
    trial.spec.id = id;
    trial.record_state = state;
    trial.hparam_warnings = std::move(warnings);
    return trial;
  };
  const record::HparamWarning typo{"default", "batch_size", "dlx: warning: hyperparameter 'batch_size' is not defined"};
  const record::HparamWarning unread{"unread", "batch_sise", "dlx: warning: the experiment defines 'batch_sise'"};
  SECTION("every finished trial left a name unread: one line for the experiment") {
    const auto lines = hparam_warning_lines({row(0, "completed", {typo, unread}), row(1, "failed", {typo, unread}),
                                             row(2, "running", {typo}), row(3, "", {})});
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == "trials 0-2: hyperparameter 'batch_size' is not defined");
    CHECK(lines[1] == "hyperparameter 'batch_sise' is defined but never read by any trial (2 finished): remove it "
                      "from the experiment, or read it in the trainer");
  }
  SECTION("a finished trial read it: the others' warnings stay theirs") {
    const auto lines = hparam_warning_lines({row(0, "completed", {unread}), row(1, "completed", {}),
                                             row(4, "running", {unread})});
    REQUIRE(lines.size() == 1);
    CHECK(lines[0] == "trials 0, 4: the experiment defines 'batch_sise'");
  }
  CHECK(hparam_warning_lines({row(0, "completed", {})}).empty());
}

TEST_CASE("dlx status: several defaults a trainer used on purpose make one line, a likely typo its own",
          "[cli][status]") {
  const auto row = [](int id, std::vector<record::HparamWarning> warnings) {
    TrialRow trial;
    trial.spec.id = id;
    trial.record_state = "completed";
    trial.hparam_warnings = std::move(warnings);
    return trial;
  };
  // As the C++ SDK says them (the example trainer's knobs under examples/grid.yaml).
  const auto knob = [](const std::string& name, const std::string& value) {
    return record::HparamWarning{"default", name,
                                 "dlx: warning: hyperparameter '" + name + "' is not defined by the experiment, so "
                                 "hparam<double>(\"" + name + "\", ...) uses its default " + value +
                                 " (the experiment defines: learning_rate, batch_size, epochs)"};
  };
  const record::HparamWarning typo{"default", "batch_sise",
                                   "dlx: warning: hyperparameter 'batch_sise' is not defined by the experiment, so "
                                   "hparam<int>(\"batch_sise\", ...) uses its default 8 (did you mean 'batch_size'? "
                                   "the experiment defines: learning_rate, batch_size, epochs)"};
  const auto l2 = knob("l2", "0.0");
  const auto seed = knob("seed", "7");
  const auto samples = knob("samples", "4096");
  const auto lines = hparam_warning_lines({row(0, {l2, typo, seed, samples}), row(1, {l2, seed, samples}),
                                           row(2, {l2, seed, samples}), row(3, {l2, seed}), row(5, {l2, seed})});
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "trials 0-3, 5: the trainer used its own defaults for 2 hyperparameters the experiment does not "
                    "define: l2, seed (to choose them, add them to the experiment's hyperparameters:; `dlx logs` shows "
                    "each default)");
  CHECK(lines[1] == "trial 0: hyperparameter 'batch_sise' is not defined by the experiment, so "
                    "hparam<int>(\"batch_sise\", ...) uses its default 8 (did you mean 'batch_size'? the experiment "
                    "defines: learning_rate, batch_size, epochs)");
  // Alone among the names of its trials: the whole message, with its default.
  CHECK(lines[2] == "trials 0-2: hyperparameter 'samples' is not defined by the experiment, so "
                    "hparam<double>(\"samples\", ...) uses its default 4096 (the experiment defines: learning_rate, "
                    "batch_size, epochs)");
}

TEST_CASE("dlx status: restarting, crash-looping and failed trials, their warnings and the real last step",
          "[cli][status]") {
  TempDir dir;
  spit(dir.path / "experiment.yaml",
       "name: status-truth\nentrypoint: [unused]\nseed: 7\n"
       "hyperparameters:\n  x: {type: int, minval: 1, maxval: 3, count: 3}\n  batch_sise: 32\n"
       "searcher: {name: grid, metric: loss, max_length: {batches: 24}}\nmax_restarts: 5\n");
  const auto experiment = config::load_snapshot(dir.path);
  {
    searcher::Coordinator coordinator(experiment, dir.path / searcher::kJournalFileName);
    for (int ticket = 0; ticket < 3; ++ticket) REQUIRE(coordinator.request_work(ticket).kind == searcher::Work::Kind::train);
    coordinator.report_exit(2, searcher::ExitKind::failed, "crash 1");
  }
  const record::HparamWarning typo{
      "default", "batch_size",
      "dlx: warning: hyperparameter 'batch_size' is not defined by the experiment, so trial.hparam(\"batch_size\", ...) "
      "uses its default 64 (did you mean 'batch_sise'? the experiment defines: x, batch_sise)"};
  const auto save = [&](int id, const std::string& state, const std::string& reason, int failures, int same) {
    record::TrialRecord trial;
    trial.experiment = "status-truth";
    trial.trial_id = id;
    trial.state = state;
    trial.stop_reason = reason;
    trial.failures = failures;
    trial.same_failures = same;
    trial.last_error = failures ? "exit 1: ZeroDivisionError: division by zero" : "";
    trial.training.append(24, {{"loss", 0.5}});  // trained to 24, never validated
    record::add_hparam_warning(trial, typo);
    fs::create_directories(dir.path / "trials" / std::to_string(id));
    record::save_trial_record(trial, dir.path / "trials" / std::to_string(id) / "trial.h5");
  };
  save(0, "running", "crash: exit 1: ZeroDivisionError: division by zero; restart 1 of max_restarts 5", 1, 1);
  save(1, "running", "crash: exit 1: ZeroDivisionError: division by zero; restart 2 of max_restarts 5", 2, 2);
  save(2, "failed", "failed: exit 78: dlx.ConfigError: no 'loss' (exit 78: an error in the trial's code or "
                    "configuration, not restarted)", 1, 1);

  const auto table = run_dlx({"status", dir.path.string()});
  INFO(table.out << table.err);
  REQUIRE(table.status == 0);
  CHECK_THAT(table.out, Catch::Contains("\n0        restarting (1 of 5)  "));
  CHECK_THAT(table.out, Catch::Contains("\n1        crash-looping (2 of 5)  "));
  CHECK_THAT(table.out, Catch::Contains("failed at 24"));  // where it last reported, not the searcher's 0
  CHECK_THAT(table.out, Catch::Contains("# trial 2 failed: exit 78: dlx.ConfigError: no 'loss'"));
  CHECK_THAT(table.out, Catch::Contains("# trial 0 restarting: crash: exit 1: ZeroDivisionError: division by zero; "
                                        "restart 1 of max_restarts 5\n"));
  CHECK_THAT(table.out, Catch::Contains("# warning: trials 0-2: hyperparameter 'batch_size' is not defined by the "
                                        "experiment, so trial.hparam(\"batch_size\", ...) uses its default 64 (did you "
                                        "mean 'batch_sise'?"));
  CHECK_THAT(table.out, Catch::Contains("# 3 trials: 1 crash-looping, 1 failed, 1 restarting\n"));

  const auto json = nlohmann::json::parse(run_dlx({"status", dir.path.string(), "--json"}).out);
  CHECK(json["trials"][0]["state"] == "restarting");
  CHECK(json["trials"][0]["state_note"] == "1 of 5");
  CHECK(json["trials"][1]["last_error"] == "exit 1: ZeroDivisionError: division by zero");
  CHECK(json["trials"][2]["hparam_warnings"][0]["name"] == "batch_size");
  REQUIRE(json["hparam_warnings"].size() == 1);
}

TEST_CASE("dlx status: trials that failed alike share one line under the table", "[cli][status]") {
  TempDir dir;
  spit(dir.path / "experiment.yaml",
       "name: alike\nentrypoint: [unused]\nseed: 7\nhyperparameters:\n  x: {type: int, minval: 1, maxval: 6, count: 6}\n"
       "searcher: {name: grid, metric: loss}\n");
  const std::string bug = "failed: exit 78: dlx.ConfigError: no 'loss' (exit 78: an error in the trial's code or "
                          "configuration, not restarted)";
  const auto save = [&](int id, const std::string& reason) {
    record::TrialRecord trial;
    trial.experiment = "alike";
    trial.trial_id = id;
    trial.state = "failed";
    trial.stop_reason = reason;
    trial.failures = 1;
    fs::create_directories(dir.path / "trials" / std::to_string(id));
    record::save_trial_record(trial, dir.path / "trials" / std::to_string(id) / "trial.h5");
  };
  for (const int id : {0, 1, 2, 4}) save(id, bug);
  save(3, "failed: exit 1: MemoryError");
  save(5, "failed: exit 1: MemoryError");
  const auto table = run_dlx({"status", dir.path.string()});
  INFO(table.out << table.err);
  REQUIRE(table.status == 0);
  // In the order each text first appears, the trials as ranges.
  CHECK_THAT(table.out, Catch::Contains("\n# trials 0-2, 4 " + bug + "\n# trials 3, 5 failed: exit 1: MemoryError\n"));
  CHECK_THAT(table.out, !Catch::Contains("# trial 1 "));
  // --json keeps each trial's own.
  const auto json = nlohmann::json::parse(run_dlx({"status", dir.path.string(), "--json"}).out);
  CHECK(json["trials"][4]["stop_reason"] == bug);
}

TEST_CASE("dlx status: tasks that run several trials in turn map each trial to its task", "[cli][status]") {
  TempDir dir;
  spit(dir.path / "experiment.yaml",
       "name: turns\nentrypoint: [unused]\nseed: 7\nhyperparameters:\n  x: {type: int, minval: 1, maxval: 4, count: 4}\n"
       "searcher: {name: grid, metric: loss, max_length: {batches: 24}}\nresources: {max_array_tasks: 2}\n");
  const auto experiment = config::load_snapshot(dir.path);
  record::TrialRecord first;
  first.experiment = "turns";
  first.trial_id = 0;
  first.state = "running";
  fs::create_directories(dir.path / "trials" / "0");
  record::save_trial_record(first, dir.path / "trials" / "0" / "trial.h5");
  // Task 0 runs trial 0 (trials 0 and 2 are its); task 1 waits in the queue (trials 1 and 3).
  const auto slurm = view({{0, SlurmTask{"RUNNING", "None", 0}}, {1, SlurmTask{"PENDING", "JobArrayTaskLimit", 0}}});
  const auto report = read_status(dir.path, experiment, nullptr, &slurm);
  REQUIRE(report.rows.size() == 4);
  CHECK(report.rows[0].state == "running");
  CHECK(report.rows[1].state == "pending");
  CHECK(report.rows[2].state == "pending");  // not "starting": its task runs trial 0 first
  CHECK(report.rows[2].detail == "pending: waits its turn in array task 0");
  CHECK(report.rows[3].state == "pending");
}
