// SPDX-License-Identifier: Apache-2.0
// The files a trainer writes in its node-local working directory, kept in <trial>/outputs/
// (launch/trial_outputs.hpp): the rule on real directories, then the real dlx-launch binary under
// a fake srun environment, on the trial's first node and on another.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "dlx/launch/master_port_rendezvous.hpp"
#include "dlx/launch/restored_outputs.hpp"
#include "dlx/launch/trial_outputs.hpp"
#include "fake_srun_step.hpp"
#include "process_helpers.hpp"

using dlx::test::run_with_env;
using dlx::test::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string kOutputsLaunch = DLX_LAUNCH_BINARY;

std::string whole_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& path, const std::string& text, fs::perms mode = fs::perms(0644)) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
  fs::permissions(path, mode);
}

fs::perms mode_of(const fs::path& path) { return fs::status(path).permissions() & fs::perms::mask; }

std::vector<std::string> relatives(const std::vector<dlx::launch::TrainerFile>& files) {
  std::vector<std::string> names;
  for (const auto& file : files) names.push_back(file.relative.string());
  return names;
}

// A snapshot and its copy as dlx-launch makes them: the copy complete (its marker's time) before
// the trainer writes anything.
struct CopyOfSnapshot {
  explicit CopyOfSnapshot(const fs::path& dir) : snapshot(dir / "code"), copy(dir / "copy") {
    for (const auto& top : {snapshot, copy}) {
      write_file(top / "train.py", "print('trained')\n", fs::perms(0440));
      write_file(top / "lib" / "model.py", "class Model: pass\n", fs::perms(0440));
      fs::create_symlink("train.py", top / "run.py");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the file system's clock tick
    copied_at = fs::file_time_type::clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  fs::path snapshot, copy;
  fs::file_time_type copied_at;
};

const auto kNeverLate = [] { return false; };

}  // namespace

TEST_CASE("trial outputs: the trainer's files are kept by path, and the copied code, __pycache__ and links are not",
          "[launch][outputs]") {
  TempDir dir("outputs-rule");
  CopyOfSnapshot code(dir.path());
  write_file(code.copy / "model.pt", "weights", fs::perms(0644));
  write_file(code.copy / "runs" / "exp1" / "events.out", "scalars", fs::perms(0600));
  write_file(code.copy / "plot.sh", "#!/bin/sh\n", fs::perms(0755));
  write_file(code.copy / "lib" / "__pycache__" / "model.cpython-311.pyc", "bytecode");
  fs::permissions(code.copy / "lib" / "model.py", fs::perms(0640));  // the trainer rewrites a copied file
  write_file(code.copy / "lib" / "model.py", "class Model: changed\n", fs::perms(0640));
  fs::create_symlink("/etc/hostname", code.copy / "host");

  const auto found = dlx::launch::find_trainer_files(code.copy, code.snapshot, code.copied_at);
  CHECK(relatives(found.files) ==
        std::vector<std::string>{"lib/model.py", "model.pt", "plot.sh", "runs/exp1/events.out"});
  REQUIRE(found.special.size() == 1);
  CHECK(found.special[0].file.relative == "host");
  CHECK(found.special[0].why == "a symbolic link");

  const fs::path outputs = dir.path() / "trial" / "outputs";
  fs::create_directories(outputs.parent_path());
  write_file(outputs / "model.pt", "an earlier attempt's weights");
  write_file(outputs / "from-attempt-1.txt", "kept");
  write_file(outputs / "runs" / ".tmp.events.out.123", "half a copy");  // an attempt killed while copying
  const auto kept = dlx::launch::keep_trainer_files(code.copy, found, outputs, 1'000'000, kNeverLate);
  CHECK(relatives(kept.kept) == relatives(found.files));
  CHECK(kept.kept_bytes == 21 + 7 + 10 + 7);
  REQUIRE(kept.left.size() == 1);  // the link
  CHECK(whole_file(outputs / "model.pt") == "weights");  // replaced whole
  CHECK(whole_file(outputs / "from-attempt-1.txt") == "kept");
  CHECK(whole_file(outputs / "runs" / "exp1" / "events.out") == "scalars");
  CHECK(whole_file(outputs / "lib" / "model.py") == "class Model: changed\n");
  CHECK_FALSE(fs::exists(outputs / "train.py"));
  CHECK_FALSE(fs::exists(outputs / "lib" / "__pycache__"));
  CHECK_FALSE(fs::exists(outputs / "host"));
  CHECK_FALSE(fs::exists(outputs / "runs" / ".tmp.events.out.123"));
  // Modes kept, never widened, nothing for others.
  CHECK(mode_of(outputs / "model.pt") == fs::perms(0640));
  CHECK(mode_of(outputs / "plot.sh") == fs::perms(0750));
  CHECK(mode_of(outputs / "runs" / "exp1" / "events.out") == fs::perms(0600));
  CHECK(mode_of(outputs / "runs" / "exp1") == fs::perms(0750));  // made here (runs/ by the earlier attempt)
  CHECK(mode_of(outputs / "lib") == fs::perms(0750));

  // The log's lines.
  char* text = nullptr;
  std::size_t size = 0;
  std::FILE* log = ::open_memstream(&text, &size);
  dlx::launch::print_kept_outputs(log, kept, outputs);
  std::fclose(log);
  const std::string said(text, size);
  std::free(text);
  CHECK(said == "dlx-launch: kept 4 files (45 B) the trainer wrote in its working directory, in " + outputs.string() +
                    "/: lib/model.py, model.pt, plot.sh, runs/exp1/events.out\n"
                    "dlx-launch: not kept from the working directory: host: a symbolic link\n");
}

TEST_CASE("trial outputs: code.keep_outputs caps an attempt's bytes, a count its files, and a notice's deadline ends "
          "the copying",
          "[launch][outputs]") {
  TempDir dir("outputs-cap");
  CopyOfSnapshot code(dir.path());
  write_file(code.copy / "a-small.txt", std::string(100, 'a'));
  write_file(code.copy / "b-big.bin", std::string(5000, 'b'));
  write_file(code.copy / "c-small.txt", std::string(100, 'c'));
  const auto found = dlx::launch::find_trainer_files(code.copy, code.snapshot, code.copied_at);
  const fs::path outputs = dir.path() / "outputs";

  const auto capped = dlx::launch::keep_trainer_files(code.copy, found, outputs, 1000, kNeverLate);
  CHECK(relatives(capped.kept) == std::vector<std::string>{"a-small.txt", "c-small.txt"});
  REQUIRE(capped.left.size() == 1);
  CHECK(capped.left[0].file.relative == "b-big.bin");
  CHECK(capped.left[0].why == "over code.keep_outputs (1.00 kB an attempt): raise it, or have the trainer write "
                              "files this big to shared storage itself");
  CHECK_FALSE(fs::exists(outputs / "b-big.bin"));

  const auto counted = dlx::launch::keep_trainer_files(code.copy, found, dir.path() / "counted", 1'000'000,
                                                       kNeverLate, 2);
  CHECK(relatives(counted.kept) == std::vector<std::string>{"a-small.txt", "b-big.bin"});
  REQUIRE(counted.left.size() == 1);
  CHECK(counted.left[0].why == "over 2 files an attempt: have the trainer write this many files to shared storage "
                               "itself, or into fewer files");

  int asked = 0;
  const auto late = dlx::launch::keep_trainer_files(code.copy, found, dir.path() / "late", 1'000'000,
                                                    [&] { return ++asked > 1; });
  CHECK(relatives(late.kept) == std::vector<std::string>{"a-small.txt"});
  REQUIRE(late.left.size() == 2);
  CHECK(late.left[0].why == "not copied: the step was being ended (a notice) and time ran out");

  // Nothing written: nothing made, nothing said.
  TempDir quiet("outputs-none");
  CopyOfSnapshot untouched(quiet.path());
  const auto none = dlx::launch::find_trainer_files(untouched.copy, untouched.snapshot, untouched.copied_at);
  CHECK(none.files.empty());
  CHECK(none.special.empty());
  const auto nothing = dlx::launch::keep_trainer_files(untouched.copy, none, quiet.path() / "outputs", 1000, kNeverLate);
  CHECK(nothing.kept.empty());
  CHECK_FALSE(fs::exists(quiet.path() / "outputs"));
}

TEST_CASE("trial outputs: what earlier attempts kept is restored into a new copy and kept again only when changed",
          "[launch][outputs]") {
  TempDir dir("outputs-restore");
  CopyOfSnapshot code(dir.path());
  const fs::path outputs = dir.path() / "trial" / "outputs";
  write_file(outputs / "log.csv", "epoch 1\n", fs::perms(0640));
  write_file(outputs / "checkpoint.pth.tar", std::string(300, 'w'), fs::perms(0600));
  write_file(outputs / "runs" / "a" / "events", "scalars", fs::perms(0640));
  write_file(outputs / "lib" / "model.py", "class Model: changed\n", fs::perms(0640));  // rewrote a copied file
  write_file(outputs / "runs" / ".tmp.events.9", "half a copy");                        // an interrupted keep
  fs::create_symlink("/etc/hostname", outputs / "host");
  write_file(outputs / "run.py" / "x", "a directory where the snapshot has a link");
  const fs::path fresh = dir.path() / "fresh";  // a copy being made, the snapshot copied, before its marker
  fs::copy(code.snapshot, fresh, fs::copy_options::recursive | fs::copy_options::copy_symlinks);

  const auto restored = dlx::launch::restore_kept_outputs(outputs, fresh, 1'000'000);
  CHECK(relatives(restored.restored) ==
        std::vector<std::string>{"checkpoint.pth.tar", "lib/model.py", "log.csv", "runs/a/events"});
  CHECK(restored.bytes == 300 + 21 + 8 + 7);
  REQUIRE(restored.left.size() == 1);
  CHECK(restored.left[0].file.relative == "run.py/x");
  CHECK(restored.left[0].why == "run.py is a link in the code snapshot");
  CHECK(whole_file(fresh / "log.csv") == "epoch 1\n");
  CHECK(whole_file(fresh / "lib" / "model.py") == "class Model: changed\n");  // the snapshot's replaced
  CHECK(whole_file(fresh / "train.py") == "print('trained')\n");
  CHECK_FALSE(fs::exists(fresh / "host"));
  CHECK_FALSE(fs::exists(fresh / "runs" / ".tmp.events.9"));
  CHECK(mode_of(fresh / "checkpoint.pth.tar") == fs::perms(0600));
  CHECK(fs::last_write_time(fresh / "log.csv") == fs::last_write_time(outputs / "log.csv"));

  // The attempt appends a line to its log and writes a new file: those two are kept, not the
  // restored files it left as they were.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto marked = fs::file_time_type::clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::ofstream(fresh / "log.csv", std::ios::app) << "epoch 2\n";
  write_file(fresh / "model_best.pth.tar", "best");
  const auto found = dlx::launch::find_trainer_files(fresh, code.snapshot, marked, outputs);
  CHECK(relatives(found.files) == std::vector<std::string>{"log.csv", "model_best.pth.tar"});
  // Without knowing the outputs, every restored file the snapshot lacks would be copied back again.
  CHECK(relatives(dlx::launch::find_trainer_files(fresh, code.snapshot, marked).files) ==
        std::vector<std::string>{"checkpoint.pth.tar", "log.csv", "model_best.pth.tar", "runs/a/events"});

  // The budget bounds the restore as it bounds the keep; no outputs/ or a budget of 0: nothing.
  const fs::path small = dir.path() / "small";
  fs::copy(code.snapshot, small, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  const auto capped = dlx::launch::restore_kept_outputs(outputs, small, 100);
  CHECK(relatives(capped.restored) == std::vector<std::string>{"lib/model.py", "log.csv", "runs/a/events"});
  REQUIRE(capped.left.size() == 2);
  CHECK(capped.left[0].file.relative == "checkpoint.pth.tar");
  CHECK(capped.left[0].why == "over code.keep_outputs (100 B), which bounds what is restored too");
  CHECK(dlx::launch::restore_kept_outputs(dir.path() / "none", small, 1000).restored.empty());
  CHECK(dlx::launch::restore_kept_outputs(outputs, dir.path() / "zero", 0).restored.empty());
  CHECK_FALSE(fs::exists(dir.path() / "zero"));

  char* text = nullptr;
  std::size_t size = 0;
  std::FILE* log = ::open_memstream(&text, &size);
  dlx::launch::print_restored_outputs(log, capped, outputs);
  std::fclose(log);
  const std::string said(text, size);
  std::free(text);
  CHECK(said == "dlx-launch: restored 3 files (36 B) that earlier attempts kept in " + outputs.string() +
                    "/ into the working directory: lib/model.py, log.csv, runs/a/events\n"
                    "dlx-launch: not restored into the working directory: checkpoint.pth.tar (300 B): over "
                    "code.keep_outputs (100 B), which bounds what is restored too\n"
                    "dlx-launch: not restored into the working directory: run.py/x (41 B): run.py is a link in "
                    "the code snapshot\n");
}

TEST_CASE("launcher outputs: a requeued attempt finds what the earlier one wrote in its working directory",
          "[launch-cli][outputs]") {
  TempDir dir("outputs-requeued");
  dlx::test::snapshot_train_sh(dir.path());
  fs::copy_file(fs::path(DLX_SOURCE_DIR) / "examples" / "grid.yaml", dir.path() / "experiment.yaml");
  fs::create_directories(dir.path() / "site");
  // A script that appends a line to its log each attempt, as one each epoch would.
  const std::vector<std::string> trainer = {kOutputsLaunch, "--", "sh", "-c",
                                            "echo attempt-${SLURM_RESTART_COUNT:-0} >> log.csv; sh train.sh"};
  const fs::path outputs = dir.path() / "trials" / "1" / "outputs";
  auto env = dlx::test::two_node_step_env(dir.path(), 0);
  env["DLX_SITE_LOCAL_DIR"] = (dir.path() / "site").string();
  auto first = run_with_env(env, trainer);
  INFO(first.output);
  CHECK(first.status == 0);
  CHECK_THAT(first.output, !Catch::Contains("restored"));
  env["SLURM_RESTART_COUNT"] = "1";
  auto second = run_with_env(env, trainer);
  INFO(second.output);
  CHECK(second.status == 0);
  CHECK_THAT(second.output, Catch::Contains("dlx-launch: restored 1 file (10 B) that earlier attempts kept in " +
                                            outputs.string() + "/ into the working directory: log.csv\n"));
  CHECK_THAT(second.output, Catch::Contains("dlx-launch: kept 1 file (20 B) the trainer wrote"));
  CHECK(whole_file(outputs / "log.csv") == "attempt-0\nattempt-1\n");
}

TEST_CASE("launcher outputs: dlx-launch keeps what the trainer wrote on the first node, names it on another",
          "[launch-cli][outputs]") {
  TempDir dir("outputs-launch");
  dlx::test::snapshot_train_sh(dir.path());
  fs::copy_file(fs::path(DLX_SOURCE_DIR) / "examples" / "grid.yaml", dir.path() / "experiment.yaml");
  fs::create_directories(dir.path() / "site");
  const std::vector<std::string> trainer = {
      kOutputsLaunch, "--", "sh", "-c",
      "echo weights > model.pt; mkdir -p runs/a; echo scalars > runs/a/events; sh train.sh; exit ${TRAINER_EXIT:-0}"};
  const fs::path trial = dir.path() / "trials" / "1";
  const std::string copy_dir = (dir.path() / "site" / ("dlx-" + std::to_string(::geteuid())) / "code-1234-0-0-1").string();

  SECTION("the first node: kept in <trial>/outputs/, also after a crash (restarted: 85), the copy removed") {
    auto env = dlx::test::two_node_step_env(dir.path(), 0);
    env["DLX_SITE_LOCAL_DIR"] = (dir.path() / "site").string();
    env["TRAINER_EXIT"] = GENERATE("0", "3");
    auto result = run_with_env(env, trainer);
    INFO(result.output);
    CHECK(result.status == (env["TRAINER_EXIT"] == "0" ? 0 : 85));
    CHECK_THAT(result.output, Catch::Contains("trained\n"));
    CHECK_THAT(result.output, Catch::Contains("dlx-launch: kept 2 files (16 B) the trainer wrote in its working "
                                              "directory, in " + (trial / "outputs").string() +
                                              "/: model.pt, runs/a/events\n"));
    CHECK(whole_file(trial / "outputs" / "model.pt") == "weights\n");
    CHECK(whole_file(trial / "outputs" / "runs" / "a" / "events") == "scalars\n");
    CHECK_FALSE(fs::exists(trial / "outputs" / "train.sh"));
    CHECK_FALSE(fs::exists(copy_dir));
    // The trial's log has it too (dlx logs).
    bool logged = false;
    for (const auto& entry : fs::directory_iterator(trial / "logs")) {
      logged = logged || whole_file(entry.path()).find("dlx-launch: kept 2 files") != std::string::npos;
    }
    CHECK(logged);
  }

  SECTION("another node: named, not kept") {
    auto env = dlx::test::two_node_step_env(dir.path(), 1);
    env["DLX_SITE_LOCAL_DIR"] = (dir.path() / "site").string();
    dlx::launch::MasterPortRendezvous(trial / ".port.1234.0.0.1").publish(24321);  // as rank 0 would
    auto result = run_with_env(env, trainer);
    INFO(result.output);
    CHECK(result.status == 0);
    CHECK_THAT(result.output, Catch::Contains("dlx-launch: node 1 (dlxfake2): the trainer wrote 2 files (16 B) in its "
                                              "working directory on this node, which go with its node-local copy: only "
                                              "the first node's are kept, in " + (trial / "outputs").string() +
                                              "/ (write outputs on rank 0): model.pt, runs/a/events\n"));
    CHECK_FALSE(fs::exists(trial / "outputs"));
  }

  SECTION("code: {keep_outputs: false} keeps none and says nothing") {
    std::ofstream(dir.path() / "experiment.yaml", std::ios::app) << "code: {keep_outputs: false}\n";
    auto env = dlx::test::two_node_step_env(dir.path(), 0);
    env["DLX_SITE_LOCAL_DIR"] = (dir.path() / "site").string();
    auto result = run_with_env(env, trainer);
    INFO(result.output);
    CHECK(result.status == 0);
    CHECK_THAT(result.output, Catch::Contains("trained\n"));
    CHECK_THAT(result.output, !Catch::Contains("dlx-launch: kept"));
    CHECK_FALSE(fs::exists(trial / "outputs"));
  }
}

TEST_CASE("launcher outputs: of two ranks leaving one copy at once, exactly one keeps the files and removes it",
          "[launch-cli][outputs]") {
  TempDir dir("outputs-two-ranks");
  dlx::test::snapshot_train_sh(dir.path());
  std::ofstream(dir.path() / "experiment.yaml")
      << "name: two-ranks\nentrypoint: sh train.sh\nsearcher: {name: single, metric: loss}\n"
         "resources: {nodes_per_trial: 1, tasks_per_node: 2}\n";
  fs::create_directories(dir.path() / "site");
  // Both trainers write, then wait for each other and exit together: a protocol in which each
  // rank saw the other's shared lock would leave the copy, and the files, to nobody.
  const std::vector<std::string> trainer = {
      kOutputsLaunch, "--", "sh", "-c",
      "echo $SLURM_PROCID > rank-$SLURM_PROCID.txt; while [ ! -e rank-0.txt ] || [ ! -e rank-1.txt ]; do sleep 0.01; "
      "done; sh train.sh"};
  const fs::path trial = dir.path() / "trials" / "0";
  for (int round = 0; round < 5; ++round) {
    fs::remove_all(trial / "outputs");
    std::vector<dlx::test::CommandResult> results(2);
    std::vector<std::thread> ranks;
    for (int rank = 0; rank < 2; ++rank) {
      ranks.emplace_back([&, rank] {
        auto env = dlx::test::two_node_step_env(dir.path(), rank);
        env["SLURM_JOB_ID"] = std::to_string(2000 + round);
        env["SLURM_NODEID"] = "0";
        env["SLURM_LOCALID"] = std::to_string(rank);
        env["SLURM_STEP_NUM_NODES"] = "1";
        env["SLURM_STEP_TASKS_PER_NODE"] = "2";
        env["SLURM_STEP_NODELIST"] = "dlxfake1";
        env["SLURMD_NODENAME"] = "dlxfake1";
        env["DLX_TRIAL_ID"] = "0";
        env["DLX_SITE_LOCAL_DIR"] = (dir.path() / "site").string();
        results[rank] = run_with_env(env, trainer);
      });
    }
    for (auto& rank : ranks) rank.join();
    INFO("round " << round << "\nrank 0:\n" << results[0].output << "\nrank 1:\n" << results[1].output);
    CHECK(results[0].status == 0);
    CHECK(results[1].status == 0);
    CHECK(whole_file(trial / "outputs" / "rank-0.txt") == "0\n");
    CHECK(whole_file(trial / "outputs" / "rank-1.txt") == "1\n");
    const std::string said = "dlx-launch: kept 2 files (4 B) the trainer wrote in its working directory";
    const bool by_rank0 = results[0].output.find(said) != std::string::npos;
    const bool by_rank1 = results[1].output.find(said) != std::string::npos;
    CHECK(by_rank0 != by_rank1);
    CHECK(fs::is_empty(dir.path() / "site" / ("dlx-" + std::to_string(::geteuid()))));  // copy, marker, lock gone
  }
}
