// SPDX-License-Identifier: Apache-2.0
// dlx-launch as a user runs it: the real binary under fake Slurm/dlx environments.
#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/env/notice_marker.hpp"
#include "dlx/record/trial_record.hpp"
#include "dlx/launch/trial_outcome.hpp"
#include "open_counter.hpp"
#include "process_helpers.hpp"

using dlx::record::TrialRecord;
using dlx::test::run_with_env;
using dlx::test::TempDir;
using Env = std::map<std::string, std::string>;

namespace {

const std::string kLaunch = DLX_LAUNCH_BINARY;

// A srun-like environment: rank `rank` of 2 tasks on 2 nodes, 1 per node.
Env srun_env(int rank, int nodes = 2) {
  return {{"SLURM_JOB_ID", "1234"},
          {"SLURM_PROCID", std::to_string(rank)},
          {"SLURM_STEP_NUM_TASKS", std::to_string(nodes)},
          {"SLURM_LOCALID", "0"},
          {"SLURM_NODEID", std::to_string(rank)},
          {"SLURM_STEP_NUM_NODES", std::to_string(nodes)},
          {"SLURM_STEP_TASKS_PER_NODE", nodes == 1 ? "1" : "1(x2)"},
          {"SLURM_STEP_NODELIST", nodes == 1 ? "dlxfake1" : "dlxfake[1-2]"},
          {"SLURMD_NODENAME", "dlxfake" + std::to_string(rank + 1)},
          {"SLURM_LAUNCH_NODE_IPADDR", "10.9.8.7"}};
}

// An experiment directory holding the grid example as its frozen snapshot (with max_restarts
// when given).
void freeze_example(const std::filesystem::path& dir, std::optional<int> max_restarts = {}) {
  std::filesystem::copy_file(std::filesystem::path(DLX_SOURCE_DIR) / "examples" / "grid.yaml",
                             dir / "experiment.yaml");
  if (max_restarts) {
    std::ofstream(dir / "experiment.yaml", std::ios::app) << "max_restarts: " << *max_restarts << "\n";
  }
}

Env trial_env(const std::filesystem::path& dir, int id = 1) {
  return {{"DLX_EXPERIMENT_DIR", dir.string()},
          {"DLX_TRIAL_ID", std::to_string(id)},
          {"DLX_HPARAMS", R"({"learning_rate":0.1,"batch_size":16,"epochs":5})"}};
}

Env merged(Env a, const Env& b) {
  a.insert(b.begin(), b.end());
  return a;
}

std::filesystem::path record_path(const std::filesystem::path& dir, int id = 1) {
  return dir / "trials" / std::to_string(id) / "trial.h5";
}

void save_running_record(const std::filesystem::path& dir, int id = 1) {
  TrialRecord record;
  record.experiment = "logreg-grid";
  record.trial_id = id;
  record.state = "running";
  record.world_size = 2;
  record.training.append(10, {{"loss", 0.5}});
  std::filesystem::create_directories(record_path(dir, id).parent_path());
  dlx::record::save_trial_record(record, record_path(dir, id));
}

}  // namespace

TEST_CASE("launcher: dlx-launch --dry-run prints the computed environment", "[launch-cli]") {
  TempDir dir("dry-run");
  freeze_example(dir.path());
  auto result = run_with_env(merged(srun_env(1), trial_env(dir.path())), {kLaunch, "--dry-run"});
  INFO(result.output);
  REQUIRE(result.status == 0);
  CHECK_THAT(result.output, Catch::Contains("# dlx-launch: srun environment, node dlxfake2, "
                                            "rank 1 of 2"));
  CHECK_THAT(result.output, Catch::Contains("\nRANK=1\n"));
  CHECK_THAT(result.output, Catch::Contains("\nWORLD_SIZE=2\n"));
  CHECK_THAT(result.output, Catch::Contains("\nLOCAL_RANK=0\n"));
  CHECK_THAT(result.output, Catch::Contains("\nLOCAL_WORLD_SIZE=1\n"));
  CHECK_THAT(result.output, Catch::Contains("\nGROUP_RANK=1\n"));
  // dlxfake1 does not resolve: srun's host address stands in.
  CHECK_THAT(result.output, Catch::Contains("\nMASTER_ADDR=10.9.8.7\n"));
  CHECK_THAT(result.output, Catch::Contains("\nMASTER_PORT=21234\n"));
  CHECK_THAT(result.output, Catch::Contains("\nDLX_TRIAL_ID=1\n"));
  // No command given: the experiment's entrypoint.
  CHECK_THAT(result.output, Catch::Contains("# command: dlx-example-logreg"));
}

TEST_CASE("launcher: a step that does not match the experiment's resources is refused", "[launch-cli]") {
  TempDir dir("mismatch");
  freeze_example(dir.path());  // nodes_per_trial: 2
  auto result = run_with_env(merged(srun_env(0, 1), trial_env(dir.path())),
                             {kLaunch, "--", "true"});
  CHECK(result.status == 1);
  CHECK_THAT(result.output,
             Catch::Contains("dlx-launch: this step has 1 node but the experiment asks for "
                             "nodes_per_trial: 2"));
  // The trainer never ran; rank 0 marked the trial failed, with the difference, so that `dlx
  // status` says why.
  const auto record = dlx::record::load_trial_record(record_path(dir.path()));
  CHECK(record.state == "failed");
  CHECK(record.exit_code == 1);
  CHECK_THAT(record.stop_reason, Catch::StartsWith("failed: dlx-launch: this step has 1 node but the experiment "
                                                   "asks for nodes_per_trial: 2 (submit with sbatch -N 2"));
}

// One context per process (launch.hpp): the snapshot is read once, by the context, also when
// dlx-launch then records the trial failed (the record names the experiment) or crashed.
TEST_CASE("launcher: dlx-launch reads experiment.yaml once, also when it records a failure", "[launch-cli]") {
  TempDir dir("one-read");
  freeze_example(dir.path());  // nodes_per_trial: 2
  dlx::testing::OpenCounter opens(dir.path() / "experiment.yaml");
  auto refused = run_with_env(merged(srun_env(0, 1), trial_env(dir.path())), {kLaunch, "--", "true"});
  CHECK(refused.status == 1);
  CHECK(dlx::record::load_trial_record(record_path(dir.path())).experiment == "logreg-grid");
  CHECK(opens.take() == 1);

  TempDir crash_dir("one-read-crash");
  freeze_example(crash_dir.path(), 0);  // max_restarts: 0, so the crash fails the trial
  dlx::testing::OpenCounter crash_opens(crash_dir.path() / "experiment.yaml");
  auto crashed = run_with_env(merged(srun_env(0), trial_env(crash_dir.path())), {kLaunch, "--", "sh", "-c", "exit 3"});
  INFO(crashed.output);
  CHECK(crashed.status == 3);
  const auto record = dlx::record::load_trial_record(record_path(crash_dir.path()));
  CHECK(record.state == "failed");
  CHECK(record.experiment == "logreg-grid");
  CHECK(crash_opens.take() == 1);
}

TEST_CASE("launcher: no trial and no command is a clear error", "[launch-cli]") {
  auto result = run_with_env({}, {kLaunch});
  CHECK(result.status == 1);
  CHECK_THAT(result.output, Catch::Contains("no command to run") &&
                                Catch::Contains("DLX_EXPERIMENT_DIR is not set"));
  auto usage = run_with_env({}, {kLaunch, "--no-such-flag"});
  CHECK(usage.status == 2);
  CHECK_THAT(usage.output, Catch::Contains("usage: dlx-launch"));
}

TEST_CASE("launcher: the child's exit status passes through", "[launch-cli]") {
  CHECK(run_with_env({}, {kLaunch, "--", "true"}).status == 0);
  CHECK(run_with_env({}, {kLaunch, "--", "sh", "-c", "exit 7"}).status == 7);
  CHECK(run_with_env({}, {kLaunch, "--", "sh", "-c", "kill -KILL $$"}).status == 128 + 9);
  auto missing = run_with_env({}, {kLaunch, "--", "dlx-no-such-program"});
  CHECK(missing.status == 127);
  CHECK_THAT(missing.output, Catch::Contains("cannot run 'dlx-no-such-program'"));
}

TEST_CASE("launcher: the child gets the torchrun variables", "[launch-cli]") {
  auto result = run_with_env(srun_env(1), {kLaunch, "--", "sh", "-c",
                                           "echo got $RANK/$WORLD_SIZE/$MASTER_PORT"});
  CHECK(result.status == 0);
  CHECK_THAT(result.output, Catch::Contains("got 1/2/21234"));
}

TEST_CASE("launcher: a Python trainer's output is unbuffered unless the job says otherwise", "[launch-cli]") {
  const std::vector<std::string> show{kLaunch, "--", "sh", "-c", "echo \"unbuffered=[${PYTHONUNBUFFERED-unset}]\""};
  CHECK_THAT(run_with_env(srun_env(0), show).output, Catch::Contains("unbuffered=[1]"));
  auto empty = srun_env(0);
  empty["PYTHONUNBUFFERED"] = "";
  CHECK_THAT(run_with_env(empty, show).output, Catch::Contains("unbuffered=[]"));
  auto other = srun_env(0);
  other["PYTHONUNBUFFERED"] = "x";
  CHECK_THAT(run_with_env(other, show).output, Catch::Contains("unbuffered=[x]"));
  // A print reaches the pipe before the next one is made, not in an 8 KiB block at exit.
  const auto python = run_with_env(srun_env(0), {kLaunch, "--", "/usr/bin/python3", "-c",
                                                 "import os, sys\nprint('first')\n"
                                                 "os.write(2, b'second\\n')\nos._exit(0)"});
  CHECK(python.status == 0);
  CHECK_THAT(python.output, Catch::Contains("first\nsecond\n"));
}

TEST_CASE("launcher: signals sent to dlx-launch reach the child", "[launch-cli]") {
  // The child reports SIGUSR1 then exits 0 on SIGTERM; dlx-launch signals itself via its parent
  // shell's $PPID trick: the child learns dlx-launch's pid as its own parent. The wait loop has no
  // command substitution: bash 5.2 failed to parse the TERM trap's action when the signal came
  // while it ran `$(seq 1 50)` ("trap: line 2: unexpected EOF while looking for matching `)'",
  // once in a fresh CI run).
  const std::string script =
      "trap 'echo child-got-USR1' USR1; trap 'echo child-got-TERM; exit 0' TERM; "
      "kill -USR1 $PPID; sleep 0.2; kill -TERM $PPID; "
      "i=0; while [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done; exit 9";
  auto result = run_with_env({}, {kLaunch, "--", "bash", "-c", script});
  INFO(result.output);
  CHECK(result.status == 0);
  CHECK_THAT(result.output, Catch::Contains("child-got-USR1") &&
                                Catch::Contains("child-got-TERM"));
}

TEST_CASE("launcher: rank 0 marks the trial failed when the trainer exits non-zero", "[launch-cli]") {
  TempDir dir("failed");
  freeze_example(dir.path(), 0);  // max_restarts: 0
  save_running_record(dir.path());
  auto result = run_with_env(merged(srun_env(0), trial_env(dir.path())),
                             {kLaunch, "--", "sh", "-c", "exit 3"});
  CHECK(result.status == 3);
  auto record = dlx::record::load_trial_record(record_path(dir.path()));
  CHECK(record.state == "failed");
  CHECK(record.exit_code == 3);
  CHECK(record.failures == 1);
  CHECK(record.stop_reason == "failed: crash 1 is past max_restarts 0; last error: exit 3");
  CHECK(record.training.steps() == std::vector<std::int64_t>{10});  // history kept
}

TEST_CASE("launcher: the trainer gets a group nested in DLX_HPARAMS, and the record keeps dotted names",
          "[launch-cli]") {
  TempDir dir("nested");
  std::filesystem::copy_file(std::filesystem::path(DLX_SOURCE_DIR) / "examples" / "nested.yaml",
                             dir.path() / "experiment.yaml");  // optim: {lr: log, l2: double}
  auto result = run_with_env(
      merged(srun_env(0), {{"DLX_EXPERIMENT_DIR", dir.path().string()}, {"DLX_TRIAL_ID", "0"}}),
      {kLaunch, "--", "sh", "-c", "echo \"H=$DLX_HPARAMS\"; echo \"LR=$DLX_HP_OPTIM_LR\"; exit 3"});
  INFO(result.output);
  CHECK(result.status == 85);  // a crash within the default max_restarts: requeue
  const auto start = result.output.find("H=");
  REQUIRE(start != std::string::npos);
  const auto given = nlohmann::ordered_json::parse(
      result.output.substr(start + 2, result.output.find('\n', start) - start - 2));
  REQUIRE(given.contains("optim"));
  CHECK(given["optim"].size() == 2);
  const double lr = given["optim"]["lr"].get<double>();
  CHECK((lr >= 0.01 && lr <= 1.0));
  CHECK(given["batch_size"].is_number_integer());
  CHECK(given["epochs"] == 5);
  CHECK_THAT(result.output, Catch::Contains("LR=" + given["optim"]["lr"].dump()));
  // dlx-launch's failure record holds the searcher's flat names, as the trainer's would.
  const auto record = dlx::record::load_trial_record(record_path(dir.path(), 0));
  CHECK(record.hparams["optim.lr"] == given["optim"]["lr"]);
  CHECK(record.hparams["optim.l2"] == given["optim"]["l2"]);
  CHECK_FALSE(record.hparams.contains("optim"));
}

TEST_CASE("launcher: a crash within max_restarts exits 85 on every rank and counts", "[launch-cli]") {
  TempDir dir("crash");
  freeze_example(dir.path(), 2);
  save_running_record(dir.path());
  // A rank killed by SIGKILL, then a plain failure: both restarted; the third crash is final.
  auto other = run_with_env(merged(srun_env(1), trial_env(dir.path())),
                            {kLaunch, "--", "sh", "-c", "kill -KILL $$"});
  CHECK(other.status == 85);  // rank 1 decides like rank 0, from the count at its start
  auto first = run_with_env(merged(srun_env(0), trial_env(dir.path())),
                            {kLaunch, "--", "sh", "-c", "kill -KILL $$"});
  CHECK(first.status == 85);
  CHECK_THAT(first.output, Catch::Contains("crashed (killed by SIGKILL (exit 137))") &&
                            Catch::Contains("crash 1 of max_restarts 2"));
  auto record = dlx::record::load_trial_record(record_path(dir.path()));
  CHECK(record.state == "running");
  CHECK(record.failures == 1);
  CHECK(record.stop_reason == "crash: killed by SIGKILL (exit 137); restart 1 of max_restarts 2");
  auto second = run_with_env(merged(srun_env(0), trial_env(dir.path())),
                             {kLaunch, "--", "sh", "-c", "exit 1"});
  CHECK(second.status == 85);
  auto third = run_with_env(merged(srun_env(0), trial_env(dir.path())),
                            {kLaunch, "--", "sh", "-c", "exit 7"});
  CHECK(third.status == 7);
  record = dlx::record::load_trial_record(record_path(dir.path()));
  CHECK(record.state == "failed");
  CHECK(record.failures == 3);
  CHECK(record.stop_reason == "failed: crash 3 is past max_restarts 2; last error: exit 7");
}

TEST_CASE("launcher: outside a Slurm job a crash is never turned into a requeue", "[launch-cli]") {
  TempDir dir("no-slurm");
  freeze_example(dir.path(), 5);
  save_running_record(dir.path());
  auto result = run_with_env(trial_env(dir.path()), {kLaunch, "--", "sh", "-c", "exit 3"});
  CHECK(result.status == 3);
}

TEST_CASE("launcher: a trial outside a launched step is refused before anything runs", "[launch-cli]") {
  TempDir dir("unlaunched");
  freeze_example(dir.path());  // nodes_per_trial: 2
  const auto marker = dir.path() / "trainer-ran";
  const std::vector<std::string> command{kLaunch, "--", "touch", marker.string()};
  SECTION("in the batch script, without srun: the trial is marked failed with the fix") {
    const Env batch_script{{"SLURM_JOB_ID", "1234"}, {"SLURM_JOB_NUM_NODES", "2"},
                           {"SLURM_ARRAY_TASK_ID", "1"}};
    auto result = run_with_env(merged(batch_script, trial_env(dir.path())), command);
    INFO(result.output);
    CHECK(result.status == 1);
    CHECK_THAT(result.output, Catch::Contains("dlx-launch: not started by srun: this is job 1234's batch "
                                              "script") &&
                                  Catch::Contains("srun --mpi=pmix dlx-launch"));
    CHECK_FALSE(std::filesystem::exists(marker));
    const auto record = dlx::record::load_trial_record(record_path(dir.path()));
    CHECK(record.state == "failed");
    CHECK_THAT(record.stop_reason, Catch::Contains("not started by srun"));
    // --dry-run says the same and records nothing.
    TempDir other("unlaunched-dry");
    freeze_example(other.path());
    auto dry = run_with_env(merged(batch_script, trial_env(other.path())), {kLaunch, "--dry-run"});
    CHECK(dry.status == 1);
    CHECK_THAT(dry.output, Catch::Contains("not started by srun"));
    CHECK_FALSE(std::filesystem::exists(record_path(other.path())));
  }
  SECTION("outside Slurm with DLX_EXPERIMENT_DIR but no ticket: trial 0 is left as it was") {
    TrialRecord completed;
    completed.experiment = "logreg-grid";
    completed.trial_id = 0;
    completed.state = "completed";
    std::filesystem::create_directories(record_path(dir.path(), 0).parent_path());
    dlx::record::save_trial_record(completed, record_path(dir.path(), 0));
    auto result = run_with_env({{"DLX_EXPERIMENT_DIR", dir.path().string()}}, {kLaunch});
    INFO(result.output);
    CHECK(result.status == 1);
    CHECK_THAT(result.output, Catch::Contains("DLX_EXPERIMENT_DIR is set (" + dir.path().string() +
                                              ") but neither DLX_TICKET nor DLX_TRIAL_ID") &&
                                  Catch::Contains("unset DLX_EXPERIMENT_DIR"));
    CHECK(dlx::record::load_trial_record(record_path(dir.path(), 0)).state == "completed");
    CHECK_FALSE(std::filesystem::exists(dir.path() / "journal"));
    // With a trial id (a trial run by hand, as the tests do) it runs.
    auto by_hand = run_with_env(trial_env(dir.path()), command);
    CHECK(by_hand.status == 0);
    CHECK(std::filesystem::exists(marker));
  }
}

TEST_CASE("launcher: DLX_LATEST_CHECKPOINT comes from latest-valid discovery", "[launch-cli]") {
  TempDir dir("latest");
  freeze_example(dir.path());
  const auto checkpoints = dir.path() / "trials" / "1" / "checkpoints";
  std::filesystem::create_directories(checkpoints);
  auto env = merged(merged(srun_env(0), trial_env(dir.path())),
                    {{"DLX_CHECKPOINT_DIR", checkpoints.string()}, {"DLX_LATEST_CHECKPOINT", ""}});
  const std::vector<std::string> show{kLaunch, "--", "sh", "-c", "echo latest=[$DLX_LATEST_CHECKPOINT]"};
  SECTION("empty on a fresh start") {
    CHECK_THAT(run_with_env(env, show).output, Catch::Contains("latest=[]"));
  }
  SECTION("the newest valid step; a damaged newer one is skipped and reported") {
    for (std::int64_t step : {10, 20}) {
      dlx::checkpoint::CheckpointContent content;
      content.metadata.experiment = "logreg-grid";
      content.metadata.trial_id = 1;
      content.metadata.step = step;
      dlx::checkpoint::save_checkpoint(content, dlx::checkpoint::checkpoint_path(checkpoints, step));
    }
    {
      std::ofstream damaged(checkpoints / "step-30.h5");
      damaged << "not an HDF5 file";
    }
    auto result = run_with_env(env, show);
    CHECK_THAT(result.output, Catch::Contains("latest=[" + (checkpoints / "step-20.h5").string() + "]"));
    CHECK_THAT(result.output, Catch::Contains("dlx-launch: skipping checkpoint") &&
                               Catch::Contains("step-30.h5"));
  }
}

TEST_CASE("launcher: exit 85 (requeue) passes through and leaves the trial running", "[launch-cli]") {
  TempDir dir("requeue");
  freeze_example(dir.path());
  save_running_record(dir.path());
  auto result = run_with_env(merged(srun_env(0), trial_env(dir.path())),
                             {kLaunch, "--", "sh", "-c", "exit 85"});
  CHECK(result.status == 85);
  auto record = dlx::record::load_trial_record(record_path(dir.path()));
  CHECK(record.state == "running");
  CHECK(record.exit_code == 0);
}

TEST_CASE("launcher: rank 0's log says when a notice came, for a trainer killed before it could save",
          "[launch-cli]") {
  // A trainer inside a batch longer than the notice's lead is killed by Slurm without a word:
  // its log then ends with dlx-launch's line about the notice, and the notice is kept beside
  // trial.h5 for the next run's restart cause (notice_marker.hpp; trial_recorder_test reads it).
  TempDir dir("notice-said");
  freeze_example(dir.path());
  save_running_record(dir.path());
  const std::vector<std::string> busy{kLaunch, "--", "sh", "-c", "trap '' USR2; kill -USR2 $PPID; sleep 2"};
  const auto before = std::time(nullptr);
  const std::string job_end = std::to_string(before + 40);
  auto result = run_with_env(merged(merged(srun_env(0), trial_env(dir.path())), {{"SLURM_JOB_END_TIME", job_end}}),
                             busy);
  const auto after = std::time(nullptr);
  INFO(result.output);
  CHECK(result.status == 0);
  CHECK_THAT(result.output, Catch::Matches(
      "(.|\\n)*dlx-launch: SIGUSR2 at \\d\\d:\\d\\d:\\d\\d, a notice \\(a requeue, a preemption or the time limit\\), "
      "passed on to the trainer: a dlx trainer saves at its next point between two batches and exits 85, if it "
      "gets there before Slurm kills the step \\(docs/fault-tolerance.md\\)\\n(.|\\n)*"));
  const auto marker = dlx::env::read_notice_marker(record_path(dir.path()).parent_path());
  REQUIRE(marker);
  CHECK(marker->slurm_job_id == "1234");
  CHECK(marker->restarts == 0);
  CHECK(marker->signal_number == SIGUSR2);
  CHECK(marker->unix_time >= before);
  CHECK(marker->unix_time <= after);
  CHECK(marker->job_end == job_end);
  // Another rank says nothing: one line a trial.
  auto other = run_with_env(merged(srun_env(1), trial_env(dir.path())), busy);
  CHECK_THAT(other.output, !Catch::Contains("a notice (a requeue"));
}

TEST_CASE("launcher: an entrypoint string's shell outlives the notice and waits for the trainer's save",
          "[launch-cli]") {
  // Slurm signals every process of a step at a notice, the shell that runs an entrypoint string
  // of several commands too (dash does not exec the string's last program). The trainer here
  // saves for a second after the notice, then exits 85: dlx-launch must exit after it, with its
  // status. A shell that died of the notice made dlx-launch exit at once ("ended by the notice
  // before it could checkpoint"), and Slurm then ended the step while the trainer saved.
  TempDir dir("shell-notice");
  const auto d = dir.path().string();
  std::ofstream(dir.path() / "trainer.py") << "import os, signal, sys, time\n"
                                              "got = []\n"
                                              "signal.signal(signal.SIGUSR1, lambda *_: got.append(1))\n"
                                              "open(os.path.join(sys.argv[1], 'started'), 'w').close()\n"
                                              "while not got: time.sleep(0.01)\n"
                                              "time.sleep(1)\n"
                                              "open(os.path.join(sys.argv[1], 'saved'), 'w').close()\n"
                                              "print('trainer: saved', flush=True)\n"
                                              "sys.exit(85)\n";
  std::ofstream(dir.path() / "experiment.yaml")
      << "name: shell-notice\nentrypoint: cd " << d << " && /usr/bin/python3 trainer.py " << d
      << "\nsearcher: {name: single, metric: loss}\nresources: {nodes_per_trial: 1, tasks_per_node: 1}\n";
  // In a session of its own, signalled as a whole (`kill 0`), as slurmstepd signals a step.
  const std::string driver =
      "trap : USR1; \"$0\" & launch=$!; i=0; "
      "while [ ! -e \"$1/started\" ] && kill -0 $launch 2> /dev/null && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done; "
      "kill -USR1 0; "
      "wait $launch; status=$?; echo \"dlx-launch exited $status\"; "
      "if [ -e \"$1/saved\" ]; then echo saved-before-dlx-launch-exited; fi";
  auto result = run_with_env(merged(srun_env(0, 1), trial_env(dir.path(), 0)),
                             {"setsid", "-w", "bash", "-c", driver, kLaunch, d});
  INFO(result.output);
  CHECK_THAT(result.output, Catch::Contains("trainer: saved") && Catch::Contains("dlx-launch exited 85") &&
                                Catch::Contains("saved-before-dlx-launch-exited"));
  CHECK_THAT(result.output, !Catch::Contains("ended by the notice"));
}

TEST_CASE("launcher: a notice only dlx-launch gets reaches an entrypoint string's trainer", "[launch-cli]") {
  // In a container the trainer gets a notice only through dlx-launch and the runtime's signal
  // proxy, which signal dlx-launch's child: the shell of an entrypoint string. One command runs
  // as `exec` of it, so that child is the trainer itself; the shell's trap took the notice, and
  // the trainer never saved.
  TempDir dir("shell-forward");
  const auto d = dir.path().string();
  std::ofstream(dir.path() / "trainer.py") << "import os, signal, sys, time\n"
                                              "got = []\n"
                                              "signal.signal(signal.SIGUSR1, lambda *_: got.append(1))\n"
                                              "open(os.path.join(sys.argv[1], 'started'), 'w').close()\n"
                                              "for _ in range(1000):\n"
                                              "    if got: break\n"
                                              "    time.sleep(0.01)\n"
                                              "print('trainer: notice' if got else 'trainer: no notice', flush=True)\n"
                                              "sys.exit(85 if got else 3)\n";
  std::ofstream(dir.path() / "experiment.yaml")
      << "name: shell-forward\nentrypoint: DLX_TEST_A=1 /usr/bin/python3 " << d << "/trainer.py " << d
      << " 2>&1\nsearcher: {name: single, metric: loss}\nresources: {nodes_per_trial: 1, tasks_per_node: 1}\n";
  // The notice goes to dlx-launch's pid alone.
  const std::string driver =
      "\"$0\" & launch=$!; i=0; "
      "while [ ! -e \"$1/started\" ] && kill -0 $launch 2> /dev/null && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done; "
      "kill -USR1 $launch; wait $launch; echo \"dlx-launch exited $?\"";
  auto result = run_with_env(merged(srun_env(0, 1), trial_env(dir.path(), 0)), {"bash", "-c", driver, kLaunch, d});
  INFO(result.output);
  CHECK_THAT(result.output, Catch::Contains("trainer: notice") && Catch::Contains("dlx-launch exited 85"));
}

TEST_CASE("launcher: only rank 0 writes, a missing record is created as failed", "[launch-cli]") {
  TempDir dir("missing");
  freeze_example(dir.path(), 0);
  auto other = run_with_env(merged(srun_env(1), trial_env(dir.path())),
                            {kLaunch, "--", "sh", "-c", "exit 4"});
  CHECK(other.status == 4);
  CHECK_FALSE(std::filesystem::exists(record_path(dir.path())));
  auto first = run_with_env(merged(srun_env(0), trial_env(dir.path())),
                            {kLaunch, "--", "sh", "-c", "exit 4"});
  CHECK(first.status == 4);
  auto record = dlx::record::load_trial_record(record_path(dir.path()));
  CHECK(record.state == "failed");
  CHECK(record.exit_code == 4);
  CHECK(record.experiment == "logreg-grid");
  CHECK(record.trial_id == 1);
  CHECK(record.hparams.contains("batch_size"));
}

TEST_CASE("launcher: which exits mark a record failed", "[launch]") {
  TrialRecord running, completed, failed;
  completed.state = "completed";
  failed.state = "failed";
  using dlx::launch::should_mark_failed;
  CHECK_FALSE(should_mark_failed(0, running));
  CHECK_FALSE(should_mark_failed(85, running));
  CHECK_FALSE(should_mark_failed(85, std::nullopt));
  CHECK(should_mark_failed(1, running));
  CHECK(should_mark_failed(137, std::nullopt));
  CHECK_FALSE(should_mark_failed(1, completed));  // the trainer finished; a late crash is noise
  CHECK_FALSE(should_mark_failed(1, failed));
}

TEST_CASE("launcher: an exit after the trainer finished its trial in this run is not a crash", "[launch]") {
  using dlx::launch::finished_during_run;
  TrialRecord running, completed, stopped, paused, failed;
  running.state = "running";
  completed.state = "completed";
  stopped.state = "stopped";
  paused.state = "paused";
  failed.state = "failed";
  CHECK(finished_during_run(134, running, completed));  // abort at exit, after finish()
  CHECK(finished_during_run(134, std::nullopt, completed));  // the trial's first run
  CHECK(finished_during_run(1, running, stopped));
  CHECK(finished_during_run(139, running, paused));  // an ASHA pause is a finish too
  CHECK_FALSE(finished_during_run(134, running, running));  // a crash before finish()
  CHECK_FALSE(finished_during_run(134, running, std::nullopt));
  CHECK_FALSE(finished_during_run(1, running, failed));
  CHECK_FALSE(finished_during_run(1, completed, completed));  // finished before this run: not ours
  CHECK_FALSE(finished_during_run(0, running, completed));
  CHECK_FALSE(finished_during_run(85, running, completed));
  const auto warning = dlx::launch::exit_after_finish_warning(134, "completed", "terminate called without an active exception");
  CHECK_THAT(warning, Catch::StartsWith("dlx-launch: warning: the trainer was killed by SIGABRT (exit 134) after its "
                                        "trial was completed ('terminate called without an active exception')") &&
                          Catch::Contains("not counted as a crash and dlx-launch exits 0") &&
                          Catch::Contains("torch.distributed.destroy_process_group()"));
}

TEST_CASE("launcher: the trainer's last error line", "[launch]") {
  using dlx::launch::last_error_line;
  CHECK(last_error_line("") == "");
  CHECK(last_error_line("Traceback (most recent call last):\n  File \"t.py\", line 3\nValueError: lr < 0\n\n") ==
        "ValueError: lr < 0");
  // dlx-launch's own lines and warnings are not the trainer's error.
  CHECK(last_error_line("RuntimeError: boom\ndlx: warning: hyperparameter 'x' is ...\n"
                        "dlx-launch: the trainer crashed\n") == "RuntimeError: boom");
  CHECK(last_error_line("terminate called after throwing an instance of 'dlx::TrialError'\n  what():  dlx: no\r\n") ==
        "what():  dlx: no");
  CHECK(last_error_line("UserWarning: deprecated\n") == "");
  // PyTorch 2.x's "[rank<R>]: " on every line of an uncaught exception under a process group:
  // the same error on two ranks is one line, so that three in a row are a crash loop.
  const std::string rank1 = "[rank1]: Traceback (most recent call last):\n[rank1]:   File \"train.py\", line 21\n"
                            "[rank1]: AttributeError: module 'dlx' has no attribute 'init'\n";
  CHECK(last_error_line(rank1) == "AttributeError: module 'dlx' has no attribute 'init'");
  CHECK(last_error_line("[rank0]: AttributeError: module 'dlx' has no attribute 'init'\n[rank0]: \n") ==
        "AttributeError: module 'dlx' has no attribute 'init'");
  CHECK(last_error_line("[rank12]: [rank12]: x\n") == "[rank12]: x");  // once, as PyTorch adds it
  CHECK(last_error_line("[rank]: not PyTorch's\n") == "[rank]: not PyTorch's");
  CHECK(last_error_line("[rank3] no colon\n") == "[rank3] no colon");
  using dlx::launch::crash_error;
  CHECK(crash_error(1, "ValueError: lr < 0") == "exit 1: ValueError: lr < 0");
  CHECK(crash_error(137, "") == "killed by SIGKILL (exit 137)");
  CHECK(crash_error(137, "dlx: no GPU visible") == "killed by SIGKILL (exit 137)");  // not the killer's words
  CHECK(crash_error(134, "Assertion `n > 0' failed.") == "killed by SIGABRT (exit 134): Assertion `n > 0' failed.");
  CHECK(crash_error(1, std::string(5000, 'x')).size() <= dlx::record::kMaxLastErrorBytes);
  // What ended it, when known (the OOM killer): after the signal, or after the trainer's words.
  const std::string oom = "out of memory: the kernel's OOM killer ended 1 process in this rank's memory cgroup";
  CHECK(crash_error(137, "dlx: no GPU visible", oom) == "killed by SIGKILL (exit 137): " + oom);
  CHECK(crash_error(1, "RuntimeError: DataLoader worker (pid 7) is killed by signal: Killed.", oom) ==
        "exit 1: RuntimeError: DataLoader worker (pid 7) is killed by signal: Killed.; " + oom);
  CHECK(crash_error(1, "", oom) == "exit 1: " + oom);
}

TEST_CASE("launcher: which crashes are restarted", "[launch]") {
  using dlx::launch::decide_exit;
  using Final = dlx::launch::ExitDecision::Final;
  TrialRecord running;
  SECTION("a configuration error (exit 78) fails at once, restarts left or not") {
    const auto decision = decide_exit(78, running, 5, "exit 78: dlx.ConfigError: no 'accuracy'");
    CHECK(decision.crash);
    CHECK_FALSE(decision.requeue);
    CHECK(decision.final == Final::config_error);
    CHECK(decision.status == 78);
  }
  SECTION("Python that cannot compile the trainer's code fails at once, restarts left or not") {
    for (const auto* error : {"exit 1: SyntaxError: invalid syntax", "exit 1: IndentationError: unexpected indent",
                              "exit 1: TabError: inconsistent use of tabs and spaces in indentation"}) {
      const auto decision = decide_exit(1, running, 5, error);
      CHECK(decision.final == Final::code_error);
      CHECK_FALSE(decision.requeue);
      CHECK(decision.status == 1);
    }
    // Only Python's own words, at the start of the line, on its exit status: a trainer that merely
    // mentions one, or a runtime error, is restarted as before.
    CHECK(decide_exit(1, running, 5, "exit 1: ValueError: SyntaxError: in the user's formula").requeue);
    CHECK(decide_exit(2, running, 5, "exit 2: SyntaxError: invalid syntax").requeue);
    CHECK(decide_exit(1, running, 5, "exit 1: ModuleNotFoundError: No module named 'torchvision'").requeue);
  }
  SECTION("a crash with restarts left is requeued, past max_restarts it fails") {
    CHECK(decide_exit(1, running, 5, "exit 1").requeue);
    running.failures = 5;
    const auto last = decide_exit(1, running, 5, "exit 1");
    CHECK(last.final == Final::restarts_exhausted);
    CHECK(last.status == 1);
    CHECK(decide_exit(1, running, std::nullopt, "exit 1").final == Final::restarts_exhausted);
  }
  SECTION("the same crash three times in a row is a crash loop") {
    running.failures = 2;
    running.last_error = "exit 1: ZeroDivisionError: division by zero";
    running.same_failures = 2;
    const auto third = decide_exit(1, running, 5, "exit 1: ZeroDivisionError: division by zero");
    CHECK(third.final == Final::crash_loop);
    CHECK(third.same_failures == 3);
    running.same_failures = 1;
    const auto second = decide_exit(1, running, 5, "exit 1: ZeroDivisionError: division by zero");
    CHECK(second.requeue);
    CHECK(second.same_failures == 2);
    // Another error starts a new count.
    const auto other = decide_exit(1, running, 5, "exit 1: KeyError: 'x'");
    CHECK(other.requeue);
    CHECK(other.same_failures == 1);
  }
}

TEST_CASE("launcher: exit 78 fails the trial at once, with the trainer's last error line", "[launch-cli]") {
  TempDir dir("config-error");
  freeze_example(dir.path(), 5);
  save_running_record(dir.path());
  auto result = run_with_env(
      merged(srun_env(0), trial_env(dir.path())),
      {kLaunch, "--", "sh", "-c",
       "echo 'Traceback (most recent call last):' >&2; "
       "echo \"dlx.ConfigError: dlx: the validation report at step 24 has no 'accuracy'\" >&2; exit 78"});
  CHECK(result.status == 78);  // not 85: no restart
  const auto record = dlx::record::load_trial_record(record_path(dir.path()));
  CHECK(record.state == "failed");
  CHECK(record.failures == 1);
  CHECK(record.exit_code == 78);
  CHECK(record.last_error == "exit 78: dlx.ConfigError: dlx: the validation report at step 24 has no 'accuracy'");
  CHECK(record.stop_reason ==
        "failed: exit 78: dlx.ConfigError: dlx: the validation report at step 24 has no 'accuracy' (exit 78: an "
        "error in the trial's code or configuration, not restarted)");
  CHECK_THAT(result.output, Catch::Contains("dlx-launch: trial 1 is failed: exit 78: dlx.ConfigError"));
}

TEST_CASE("launcher: a trainer Python cannot compile fails the trial at once, naming the error", "[launch-cli]") {
  TempDir dir("syntax-error");
  freeze_example(dir.path(), 5);
  save_running_record(dir.path());
  std::ofstream(dir.path() / "train.py") << "import os\nprint('training'\nx = 1\n";
  auto result = run_with_env(merged(srun_env(0), trial_env(dir.path())),
                             {kLaunch, "--", "/usr/bin/python3", (dir.path() / "train.py").string()});
  INFO(result.output);
  CHECK(result.status == 1);  // not 85: no restart, though max_restarts 5 allows one
  CHECK_THAT(result.output, Catch::Contains("train.py\", line 2"));  // Python's own words, in the log
  const auto record = dlx::record::load_trial_record(record_path(dir.path()));
  CHECK(record.state == "failed");
  CHECK(record.failures == 1);
  CHECK_THAT(record.last_error, Catch::StartsWith("exit 1: SyntaxError: "));
  CHECK_THAT(record.stop_reason, Catch::StartsWith("failed: exit 1: SyntaxError: ") &&
                                     Catch::EndsWith(" (Python could not compile the trainer's code: a restart would "
                                                     "fail alike, so it is not restarted; `dlx logs` shows the file "
                                                     "and line)"));
  CHECK_THAT(result.output, Catch::Contains("dlx-launch: trial 1 is failed: exit 1: SyntaxError: "));
}

TEST_CASE("launcher: the same crash three times in a row is not restarted again", "[launch-cli]") {
  TempDir dir("crash-loop");
  freeze_example(dir.path(), 5);
  save_running_record(dir.path());
  const auto crash = [&](const std::string& error) {
    return run_with_env(merged(srun_env(0), trial_env(dir.path())),
                        {kLaunch, "--", "sh", "-c", "echo '" + error + "' >&2; exit 1"});
  };
  CHECK(crash("ZeroDivisionError: division by zero").status == 85);
  CHECK(crash("KeyError: 'lr'").status == 85);  // another error: a new count
  CHECK(crash("ZeroDivisionError: division by zero").status == 85);
  auto record = dlx::record::load_trial_record(record_path(dir.path()));
  CHECK(record.same_failures == 1);
  CHECK(crash("ZeroDivisionError: division by zero").status == 85);
  record = dlx::record::load_trial_record(record_path(dir.path()));
  CHECK(record.state == "running");
  CHECK(record.same_failures == 2);
  CHECK(record.stop_reason == "crash: exit 1: ZeroDivisionError: division by zero; restart 4 of max_restarts 5 "
                              "(the same crash 2 times in a row; at 3 it is not restarted)");
  CHECK(crash("ZeroDivisionError: division by zero").status == 1);
  record = dlx::record::load_trial_record(record_path(dir.path()));
  CHECK(record.state == "failed");
  CHECK(record.failures == 5);
  CHECK(record.stop_reason == "failed: the same crash 3 times in a row, not restarted again (max_restarts 5 would "
                              "only repeat it): exit 1: ZeroDivisionError: division by zero");
}

TEST_CASE("launcher: each rank's output is also kept in the trial's logs, per attempt", "[launch-cli]") {
  TempDir dir("logs");
  freeze_example(dir.path());
  const auto logs = dir.path() / "trials" / "1" / "logs";
  // Under umask 000: the files still get the layout's modes.
  const auto launch = [&](int rank, const Env& extra) {
    return run_with_env(merged(merged(srun_env(rank), trial_env(dir.path())), extra),
                        {"sh", "-c", "umask 000; exec \"$@\"", "sh", kLaunch, "--", "sh", "-c",
                         "echo out of rank $RANK; echo err of rank $RANK >&2"});
  };
  auto first = launch(0, {});
  CHECK(first.status == 0);
  // Passed through as before, and copied.
  CHECK_THAT(first.output, Catch::Contains("out of rank 0") && Catch::Contains("err of rank 0"));
  CHECK_THAT(first.output, Catch::Contains("trial 1 attempt 0: each rank's output is also kept in"));
  const auto log = logs / "attempt-0.rank-0.log";
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Then what dlx-launch says after the trainer, in the same log: this shell trainer never opened
  // its trial through the SDK.
  CHECK_THAT(text, Catch::StartsWith("out of rank 0\nerr of rank 0\ndlx-launch: warning: the trainer exited 0 without "
                                     "opening trial 1 through the dlx SDK"));
  CHECK((std::filesystem::status(log).permissions() & std::filesystem::perms::all) ==
        (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
         std::filesystem::perms::group_read));
  CHECK((std::filesystem::status(logs).permissions() & std::filesystem::perms::all) ==
        (std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
         std::filesystem::perms::group_exec));
  std::ifstream marker(logs / "attempt-0.run");
  std::string run;
  std::getline(marker, run);
  CHECK(run == "1234.0.batch");

  // Rank 1 of the same run joins attempt 0; the requeued run (SLURM_RESTART_COUNT=1) is attempt 1.
  CHECK(launch(1, {}).status == 0);
  CHECK(std::filesystem::exists(logs / "attempt-0.rank-1.log"));
  CHECK(launch(0, {{"SLURM_RESTART_COUNT", "1"}}).status == 0);
  CHECK(std::filesystem::exists(logs / "attempt-1.rank-0.log"));

  // DLX_LOG_MAX_MB=0: no copy, no attempt taken.
  CHECK(launch(0, {{"SLURM_RESTART_COUNT", "2"}, {"DLX_LOG_MAX_MB", "0"}}).status == 0);
  CHECK_FALSE(std::filesystem::exists(logs / "attempt-2.run"));

  // A link where the log goes is not followed: a warning, and the trainer runs all the same.
  std::filesystem::create_symlink(dir.path() / "elsewhere", logs / "attempt-2.rank-0.log");
  auto refused = launch(0, {{"SLURM_RESTART_COUNT", "3"}});
  CHECK(refused.status == 0);
  CHECK_THAT(refused.output, Catch::Contains("out of rank 0"));
  CHECK_THAT(refused.output, Catch::Contains("warning: this rank's output is not kept in"));
  CHECK_FALSE(std::filesystem::exists(dir.path() / "elsewhere"));
}

TEST_CASE("launcher: a process the trainer leaves behind does not keep dlx-launch waiting", "[launch-cli]") {
  TempDir dir("logs-orphan");
  freeze_example(dir.path());
  const auto start = std::chrono::steady_clock::now();
  // The background sleep holds the trainer's stdout and stderr (the copy's pipes) after it exits.
  auto result = run_with_env(merged(srun_env(0), trial_env(dir.path())),
                             {kLaunch, "--", "sh", "-c", "sleep 30 & echo orphan $!"});
  const auto took = std::chrono::steady_clock::now() - start;
  const auto at = result.output.find("orphan ");
  REQUIRE(at != std::string::npos);
  ::kill(std::stoi(result.output.substr(at + 7)), SIGKILL);  // the sleep this test started
  CHECK(result.status == 0);
  CHECK(took < std::chrono::seconds(10));
}
