// SPDX-License-Identifier: Apache-2.0
// A rank whose dlx-launch fails before its trainer starts (here: its node-local code copy refused,
// or a trainer program it cannot run at all) ends the trial on every rank at once, wherever the
// others are: waiting for rank 0's MASTER_PORT, waiting for every node's data, or already in their
// trainers; a trainer that ran and exited 127 itself stays a crash. The real binary under a fake srun
// environment per rank (fake_srun_step.hpp), the ranks run side by side and meet only through the
// trial directory, as on a cluster. Without this each of them waited for its own deadline (900 s,
// 30 min, the trainer's first collective).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "dlx/record/trial_record.hpp"
#include "fake_srun_step.hpp"
#include "process_helpers.hpp"

using dlx::test::CommandResult;
using dlx::test::run_with_env;
using dlx::test::TempDir;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kRefusalLaunch = DLX_LAUNCH_BINARY;

// The grid example (2 nodes per trial, max_restarts 5) frozen with a code snapshot, so that each
// rank makes its node-local code copy under its DLX_SITE_LOCAL_DIR.
void freeze_with_code(const fs::path& dir) {
  dlx::test::snapshot_train_sh(dir);
  fs::copy_file(fs::path(DLX_SOURCE_DIR) / "examples" / "grid.yaml", dir / "experiment.yaml");
}

// Rank `rank`'s environment, its code copy under <dir>/site-<rank>: a good one, or one whose
// dlx-<uid> other users can write, which dlx-launch refuses.
std::map<std::string, std::string> rank_env(const fs::path& dir, int rank, bool refused_site) {
  const fs::path site = dir / ("site-" + std::to_string(rank));
  fs::create_directories(site);
  if (refused_site) {
    const fs::path user_dir = site / ("dlx-" + std::to_string(::geteuid()));
    fs::create_directories(user_dir);
    fs::permissions(user_dir, fs::perms::all);
  }
  auto env = dlx::test::two_node_step_env(dir, rank);
  env["DLX_SITE_LOCAL_DIR"] = site.string();
  return env;
}

std::string refusal_file_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const std::string kRefusedCopy = "refusing the node-local directory ";

// One rank's dlx-launch on a thread of its own, timed, while the test runs another rank.
class RankInBackground {
 public:
  RankInBackground(std::map<std::string, std::string> env, std::vector<std::string> argv)
      : thread_([this, env = std::move(env), argv = std::move(argv)] {
          const auto started = Clock::now();
          result_ = run_with_env(env, argv);
          took_ = Clock::now() - started;
        }) {}
  ~RankInBackground() {
    if (thread_.joinable()) thread_.join();
  }
  RankInBackground(const RankInBackground&) = delete;
  RankInBackground& operator=(const RankInBackground&) = delete;

  // Waits for the rank's exit: its status and output, and how long it ran.
  const CommandResult& result() {
    if (thread_.joinable()) thread_.join();
    return result_;
  }
  Clock::duration took() {
    result();
    return took_;
  }

 private:
  CommandResult result_;
  Clock::duration took_{};
  std::thread thread_;  // last: started once the members it writes exist
};

}  // namespace

TEST_CASE("launcher refusal: rank 0's code copy refused ends the other rank's wait for MASTER_PORT at once",
          "[launch-cli][refusal]") {
  TempDir dir("refusal-rank0");
  freeze_with_code(dir.path());
  const fs::path ran = dir.path() / "trainer-ran";
  // Rank 1 starts first and waits for rank 0's port; its own deadline (120 s here, 900 s by
  // default) is what it would otherwise wait.
  auto waiting_env = rank_env(dir.path(), 1, false);
  waiting_env["DLX_MASTER_PORT_WAIT_S"] = "120";
  RankInBackground waiting(waiting_env, {kRefusalLaunch, "--", "touch", ran.string()});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto rank0 = run_with_env(rank_env(dir.path(), 0, true), {kRefusalLaunch, "--", "touch", ran.string()});
  const auto& rank1 = waiting.result();
  INFO(rank0.output);
  INFO(rank1.output);
  CHECK(rank0.status == 1);
  CHECK_THAT(rank0.output, Catch::Contains("dlx-launch: " + kRefusedCopy));

  CHECK(rank1.status == 1);  // failed, not 85: a requeue would be refused alike
  CHECK(waiting.took() < std::chrono::seconds(60));
  CHECK_THAT(rank1.output, Catch::Contains("dlx-launch: rank 0 on dlxfake1 refused the trial (" + kRefusedCopy));
  CHECK_THAT(rank1.output, Catch::Contains("before this rank's trainer started; it is not started"));
  CHECK_THAT(rank1.output, !Catch::Contains("exiting 85"));
  CHECK_FALSE(fs::exists(ran));

  const auto told = refusal_file_text(dir.path() / "trials" / "1" / ".crash.1234.0.0");
  CHECK_THAT(told, Catch::Contains("\"refused\":true") && Catch::Contains("\"where\":\"rank 0 on dlxfake1\""));
  const auto record = dlx::record::load_trial_record(dir.path() / "trials" / "1" / "trial.h5");
  CHECK(record.state == "failed");
  CHECK_THAT(record.stop_reason, Catch::StartsWith("failed: dlx-launch: " + kRefusedCopy));
  // Told to the searcher (a PBT round, an ASHA rung would otherwise wait for the trial); a rank
  // that asks for its work after that fails with the others (the next case).
  CHECK_THAT(refusal_file_text(dir.path() / "journal"), Catch::Contains(kRefusedCopy));

  // `dlx logs` has each rank's reason too: rank 0's log ends with the error dlx-launch exits on
  // (printed once its output no longer goes through the log), rank 1's with what it was told.
  const fs::path logs = dir.path() / "trials" / "1" / "logs";
  const auto log0 = refusal_file_text(logs / "attempt-0.rank-0.log");
  const auto log1 = refusal_file_text(logs / "attempt-0.rank-1.log");
  INFO(log0);
  INFO(log1);
  CHECK_THAT(log0, Catch::StartsWith("dlx-launch: " + kRefusedCopy) && Catch::EndsWith("\n"));
  CHECK(std::count(log0.begin(), log0.end(), '\n') == 1);  // once, and nothing after it
  CHECK_THAT(rank0.output, Catch::Contains("dlx-launch: " + kRefusedCopy));
  CHECK(rank0.output.find("dlx-launch: " + kRefusedCopy) == rank0.output.rfind("dlx-launch: " + kRefusedCopy));
  CHECK_THAT(log1, Catch::Contains("dlx-launch: rank 0 on dlxfake1 refused the trial (" + kRefusedCopy));
}

TEST_CASE("launcher refusal: a rank that asks for its work after rank 0 failed the trial exits as rank 0 did",
          "[launch-cli][refusal]") {
  struct Failed {
    const char* what;
    bool refused_site;             // rank 0's code copy is refused
    std::vector<std::string> trainer;
    int status;                    // rank 0's, and so every rank's
    std::string told;              // what rank 1 says ended the trial
  };
  const std::vector<Failed> cases = {
      {"refused", true, {"true"}, 1, "rank 0 on dlxfake1 refused the trial (" + kRefusedCopy},
      // Exit 78 (a configuration error) is final: rank 0 fails the trial and tells the searcher.
      {"a final crash", false, {"sh", "-c", "echo 'ConfigError: no such layer' >&2; exit 78"}, 78,
       "rank 0 on dlxfake1: exit 78: ConfigError: no such layer crashed"}};
  for (const auto& failed : cases) {
    DYNAMIC_SECTION(failed.what) {
      TempDir dir("refusal-late");
      freeze_with_code(dir.path());
      const fs::path ran = dir.path() / "trainer-ran";
      // Rank 0 fails the trial and tells the searcher before rank 1 (a slow node) has asked.
      std::vector<std::string> argv = {kRefusalLaunch, "--"};
      argv.insert(argv.end(), failed.trainer.begin(), failed.trainer.end());
      const auto rank0 = run_with_env(rank_env(dir.path(), 0, failed.refused_site), argv);
      INFO(rank0.output);
      REQUIRE(rank0.status == failed.status);
      REQUIRE_THAT(refusal_file_text(dir.path() / "journal"), Catch::Contains("\"how\":\"failed\""));

      // The searcher has no work for its ticket any more; the run's announcement says why, and it
      // exits as rank 0 did (a 0 would read as a task with nothing to do; never 85).
      const auto rank1 = run_with_env(rank_env(dir.path(), 1, false), {kRefusalLaunch, "--", "touch", ran.string()});
      INFO(rank1.output);
      CHECK(rank1.status == failed.status);
      CHECK_THAT(rank1.output, Catch::Contains("dlx-launch: " + failed.told));
      CHECK_THAT(rank1.output, Catch::Contains(fmt::format("before this rank took its work: trial 1 is failed; exiting {} "
                                                           "as every rank of the trial does", failed.status)));
      CHECK_FALSE(fs::exists(ran));

      // A later run of the same task (requeued by hand) has nothing to do: exit 0, saying why.
      auto requeued_env = rank_env(dir.path(), 1, false);
      requeued_env["SLURM_RESTART_COUNT"] = "1";
      const auto requeued = run_with_env(requeued_env, {kRefusalLaunch, "--", "touch", ran.string()});
      INFO(requeued.output);
      CHECK(requeued.status == 0);
      CHECK_THAT(requeued.output, Catch::Contains("dlx-launch: ticket 1's trial 1 is already failed: this rank has no "
                                                  "work"));
      CHECK_FALSE(fs::exists(ran));
    }
  }
}

TEST_CASE("launcher refusal: another rank's code copy refused ends rank 0's running trainer, and rank 0 records why",
          "[launch-cli][refusal]") {
  TempDir dir("refusal-rank1");
  freeze_with_code(dir.path());
  const fs::path ran = dir.path() / "trainer-ran";
  const fs::path port_file = dir.path() / "trials" / "1" / ".port.1234.0.0.1";
  // Rank 0's trainer stands for one blocked in its first collective, waiting for rank 1.
  RankInBackground training(rank_env(dir.path(), 0, false),
                            {kRefusalLaunch, "--", "sh", "-c", "sleep 60; touch " + ran.string()});
  const auto give_up = Clock::now() + std::chrono::seconds(30);
  while (!fs::exists(port_file) && Clock::now() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(fs::exists(port_file));  // rank 0 has told its port: its trainer is starting
  std::this_thread::sleep_for(std::chrono::milliseconds(300));

  const auto rank1 = run_with_env(rank_env(dir.path(), 1, true), {kRefusalLaunch, "--", "touch", ran.string()});
  const auto& rank0 = training.result();
  INFO(rank1.output);
  INFO(rank0.output);
  CHECK(rank1.status == 1);
  CHECK_THAT(rank1.output, Catch::Contains("dlx-launch: " + kRefusedCopy));
  const auto told = refusal_file_text(dir.path() / "trials" / "1" / ".crash.1234.0.0");
  CHECK_THAT(told, Catch::Contains("\"refused\":true") && Catch::Contains("\"where\":\"rank 1 on dlxfake2\""));

  CHECK(rank0.status == 1);
  CHECK(training.took() < std::chrono::seconds(45));  // not the trainer's 60 s
  CHECK_THAT(rank0.output, Catch::Contains("dlx-launch: rank 1 on dlxfake2 refused the trial (" + kRefusedCopy));
  CHECK_THAT(rank0.output, Catch::Contains("this rank's trainer cannot go on without it and was ended"));
  CHECK_THAT(rank0.output, !Catch::Contains("exiting 85"));
  CHECK_FALSE(fs::exists(ran));
  const auto record = dlx::record::load_trial_record(dir.path() / "trials" / "1" / "trial.h5");
  CHECK(record.state == "failed");
  CHECK_THAT(record.stop_reason, Catch::StartsWith("failed: rank 1 on dlxfake2: " + kRefusedCopy));
  CHECK_THAT(record.stop_reason, !Catch::Contains("max_restarts"));  // nothing was restarted
}

TEST_CASE("launcher refusal: rank 0 waiting for every node's data stops when another rank fails before staging",
          "[launch-cli][refusal]") {
  TempDir dir("refusal-data");
  freeze_with_code(dir.path());
  std::ofstream(dir.path() / "set.bin") << "data\n";
  fs::create_directories(dir.path() / "local" / "dlxfake1");
  std::ofstream(dir.path() / "experiment.yaml", std::ios::app)
      << "data:\n  to: " << (dir.path() / "local" / "%n").string() << "\n  stage:\n    - "
      << (dir.path() / "set.bin").string() << "\n";
  const fs::path ran = dir.path() / "trainer-ran";
  auto staging_env = rank_env(dir.path(), 0, false);
  staging_env["DLX_DATA_STAGE_TIMEOUT"] = "120";  // what rank 0 would otherwise wait for node 1
  RankInBackground staging(staging_env, {kRefusalLaunch, "--", "touch", ran.string()});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto rank1 = run_with_env(rank_env(dir.path(), 1, true), {kRefusalLaunch, "--", "touch", ran.string()});
  const auto& rank0 = staging.result();
  INFO(rank1.output);
  INFO(rank0.output);
  CHECK(rank1.status == 1);
  CHECK(rank0.status == 1);
  CHECK(staging.took() < std::chrono::seconds(60));
  CHECK_THAT(rank0.output, Catch::Contains("dlx-launch: rank 1 on dlxfake2 refused the trial (" + kRefusedCopy));
  CHECK_THAT(rank0.output, Catch::Contains("before this rank's trainer started; it is not started"));
  CHECK_THAT(rank0.output, !Catch::Contains("did not stage the data"));
  CHECK_FALSE(fs::exists(ran));
  const auto record = dlx::record::load_trial_record(dir.path() / "trials" / "1" / "trial.h5");
  CHECK(record.state == "failed");
  CHECK_THAT(record.stop_reason, Catch::StartsWith("failed: rank 1 on dlxfake2: " + kRefusedCopy));
}

TEST_CASE("launcher refusal: a trainer program that cannot be run fails the trial on every rank, not restarted",
          "[launch-cli][refusal]") {
  TempDir dir("refusal-exec");
  freeze_with_code(dir.path());
  const fs::path ran = dir.path() / "trainer-ran";
  // Rank 1's trainer stands for one blocked in its first collective, waiting for rank 0's.
  RankInBackground training(rank_env(dir.path(), 1, false),
                            {kRefusalLaunch, "--", "sh", "-c", "sleep 60; touch " + ran.string()});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // Rank 0's entrypoint names a program that is not there (a typo, or not installed).
  const auto rank0 = run_with_env(rank_env(dir.path(), 0, false), {kRefusalLaunch, "--", "dlx-no-such-trainer"});
  const auto& rank1 = training.result();
  INFO(rank0.output);
  INFO(rank1.output);
  const std::string why = "cannot run the trainer's program 'dlx-no-such-trainer' on dlxfake1: No such file or "
                          "directory (fix the entrypoint in experiment.yaml, or make the program exist and be "
                          "executable on every node; a restart would fail alike, so it is not restarted)";
  CHECK(rank0.status == 1);  // not 127 and not 85: failed, where max_restarts 5 would have restarted it
  CHECK_THAT(rank0.output, Catch::Contains("dlx-launch: cannot run 'dlx-no-such-trainer': No such file or directory"));
  CHECK_THAT(rank0.output, Catch::EndsWith("dlx-launch: " + why + "\n"));
  const auto record = dlx::record::load_trial_record(dir.path() / "trials" / "1" / "trial.h5");
  CHECK(record.state == "failed");
  CHECK_THAT(record.stop_reason, Catch::StartsWith("failed: dlx-launch: " + why));
  // The other rank's trainer is ended at once, and the trial's log says why on both.
  CHECK(rank1.status == 1);
  CHECK(training.took() < std::chrono::seconds(45));
  CHECK_THAT(rank1.output, Catch::Contains("dlx-launch: rank 0 on dlxfake1 refused the trial (" + why));
  CHECK_FALSE(fs::exists(ran));
  const auto log0 = refusal_file_text(dir.path() / "trials" / "1" / "logs" / "attempt-0.rank-0.log");
  CHECK_THAT(log0, Catch::EndsWith("dlx-launch: " + why + "\n"));
}

TEST_CASE("launcher refusal: an entrypoint string whose shell cannot find its program fails the trial, not restarted",
          "[launch-cli][refusal]") {
  TempDir dir("refusal-shell");
  freeze_with_code(dir.path());
  const fs::path ran = dir.path() / "trainer-ran";
  RankInBackground training(rank_env(dir.path(), 1, false),
                            {kRefusalLaunch, "--", "sh", "-c", "sleep 60; touch " + ran.string()});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // `entrypoint: pyhton3 train.py` (a string: dlx-launch runs it with /bin/sh -c), a typo.
  const auto rank0 = run_with_env(rank_env(dir.path(), 0, false), {kRefusalLaunch, "--", "/bin/sh", "-c", "pyhton3 train.py"});
  const auto& rank1 = training.result();
  INFO(rank0.output);
  INFO(rank1.output);
  const std::string why = "cannot run the trainer's program 'pyhton3' on dlxfake1: /bin/sh: 1: pyhton3: not found "
                          "(fix the entrypoint in experiment.yaml, or make the program exist and be executable on "
                          "every node; a restart would fail alike, so it is not restarted)";
  CHECK(rank0.status == 1);  // not 85: max_restarts 5 would have restarted it, three times in a row
  CHECK_THAT(rank0.output, Catch::EndsWith("dlx-launch: " + why + "\n"));
  const auto record = dlx::record::load_trial_record(dir.path() / "trials" / "1" / "trial.h5");
  CHECK(record.state == "failed");
  CHECK_THAT(record.stop_reason, Catch::StartsWith("failed: dlx-launch: " + why));
  CHECK(rank1.status == 1);
  CHECK(training.took() < std::chrono::seconds(45));
  CHECK_THAT(rank1.output, Catch::Contains("dlx-launch: rank 0 on dlxfake1 refused the trial (" + why));
  CHECK_FALSE(fs::exists(ran));
}

TEST_CASE("launcher refusal: a trainer that ran and exits 127 itself is a crash, restarted", "[launch-cli][refusal]") {
  struct Ran {
    const char* what;
    std::vector<std::string> command;
    std::string crash;
  };
  const std::vector<Ran> cases = {
      // The program ran: its 127 is its own (a command it ran was missing), not a failed exec.
      {"a program", {"sh", "-c", "echo 'sh: 1: helper: not found' >&2; exit 127"}, "exit 127: sh: 1: helper: not found"},
      // An entrypoint string whose program (sh train.sh) ran: the shell's 127 is about the command
      // after it, which another node's PATH may have.
      {"an entrypoint string", {"/bin/sh", "-c", "sh train.sh && dlx-no-such-helper"},
       "exit 127: /bin/sh: 1: dlx-no-such-helper: not found"}};
  for (const auto& ran : cases) {
    DYNAMIC_SECTION(ran.what) {
      TempDir dir("refusal-127");
      freeze_with_code(dir.path());
      RankInBackground other(rank_env(dir.path(), 1, false), {kRefusalLaunch, "--", "sleep", "30"});
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      std::vector<std::string> argv = {kRefusalLaunch, "--"};
      argv.insert(argv.end(), ran.command.begin(), ran.command.end());
      const auto rank0 = run_with_env(rank_env(dir.path(), 0, false), argv);
      const auto& rank1 = other.result();
      INFO(rank0.output);
      INFO(rank1.output);
      CHECK(rank0.status == 85);  // requeued: max_restarts 5 allows it
      CHECK(rank1.status == 85);
      CHECK_THAT(rank0.output, !Catch::Contains("cannot run the trainer's program"));
      const auto record = dlx::record::load_trial_record(dir.path() / "trials" / "1" / "trial.h5");
      CHECK(record.state == "running");
      CHECK_THAT(record.stop_reason, Catch::StartsWith("crash: rank 0 on dlxfake1: " + ran.crash + "; restart 1"));
    }
  }
}

TEST_CASE("launcher refusal: a trial of one rank that cannot run its program is failed in the searcher too",
          "[launch-cli][refusal]") {
  TempDir dir("refusal-one-rank");
  dlx::test::snapshot_train_sh(dir.path());
  std::ofstream(dir.path() / "experiment.yaml")
      << "name: one-rank\nentrypoint: [sh, train.sh]\nhyperparameters:\n  learning_rate: 0.1\n"
         "searcher: {name: single, metric: loss}\nmax_restarts: 5\n";
  auto env = rank_env(dir.path(), 0, false);
  env["SLURM_STEP_NUM_TASKS"] = "1";
  env["SLURM_STEP_NUM_NODES"] = "1";
  env["SLURM_STEP_TASKS_PER_NODE"] = "1";
  env["SLURM_STEP_NODELIST"] = "dlxfake1";
  env["DLX_TRIAL_ID"] = "0";
  env["DLX_HPARAMS"] = R"({"learning_rate":0.1})";
  const auto ran = run_with_env(env, {kRefusalLaunch, "--", "./dlx-no-such-trainer"});
  INFO(ran.output);
  CHECK(ran.status == 1);
  const auto record = dlx::record::load_trial_record(dir.path() / "trials" / "0" / "trial.h5");
  CHECK(record.state == "failed");
  CHECK_THAT(record.stop_reason, Catch::Contains("cannot run the trainer's program './dlx-no-such-trainer' on dlxfake1"));
  // The searcher counts it failed: a requeue of the task finds no work rather than running it again.
  CHECK_THAT(refusal_file_text(dir.path() / "journal"), Catch::Contains("cannot run the trainer's program"));
  const auto again = run_with_env(env, {kRefusalLaunch, "--", "./dlx-no-such-trainer"});
  CHECK(again.status == 0);
  CHECK_THAT(again.output, Catch::Contains("has no work") && Catch::Contains("is already failed"));
}
