// SPDX-License-Identifier: Apache-2.0
// `dlx status --watch`: the real dlx binary on synthetic experiments, stdout a file (as in
// `dlx status --watch 5 > log`). An experiment whose trials have all ended is shown once and the
// command returns at once; one with a running trial is shown frame after frame, each after a line
// with its time and without escape sequences, until SIGINT or SIGTERM, which end it with exit 0;
// with --json each frame is one JSON document on its own line. Bad SECONDS and a directory that is
// not an experiment are refused with their messages.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlx/record/trial_record.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/searcher/journal_snapshot.hpp"
#include "run_program.hpp"
#include "searcher_temp_dir.hpp"

using namespace dlx;
namespace fs = std::filesystem;
using dlx::testing::spit;
using dlx::testing::TempDir;
using Clock = std::chrono::steady_clock;

namespace {

struct Run {
  int status = -1;  // -1: still running after the deadline (then killed)
  std::string out, err;
  double seconds = 0;
};

// dlx with `args`, stdout and stderr to files; `signal` sent after `signal_after` seconds when
// given, or once `meanwhile` returns true: it is called every 20 ms with the output so far (a
// trainer's progress, paced by the frames dlx has printed, not by a clock a loaded machine skews).
// A dlx still running 15 s after it started is killed: the test then fails, not hangs.
Run run_dlx(const std::vector<std::string>& args, std::optional<double> signal_after = std::nullopt,
            int signal = SIGINT, const std::function<bool(const std::string&)>& meanwhile = {}) {
  TempDir scratch;
  const auto out_path = scratch.path / "stdout", err_path = scratch.path / "stderr";
  std::vector<std::string> argv{DLX_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto started = Clock::now();
  const pid_t child = ::fork();
  if (child == 0) {
    if (!std::freopen(out_path.c_str(), "w", stdout) || !std::freopen(err_path.c_str(), "w", stderr)) ::_exit(126);
    std::vector<char*> raw;
    for (auto& arg : argv) raw.push_back(arg.data());
    raw.push_back(nullptr);
    ::execv(raw[0], raw.data());
    ::_exit(127);
  }
  REQUIRE(child > 0);
  Run run;
  bool signalled = false;
  int status = 0;
  for (;;) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
    if (::waitpid(child, &status, WNOHANG) == child) {
      run.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    const bool asked = meanwhile && !signalled && meanwhile(dlx::testing::read_whole_file(out_path));
    if (!signalled && (asked || (signal_after && elapsed >= *signal_after))) {
      ::kill(child, signal);
      signalled = true;
    }
    if (elapsed > 15) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  run.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  run.out = dlx::testing::read_whole_file(out_path);
  run.err = dlx::testing::read_whole_file(err_path);
  return run;
}

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// trial.h5 of trial `id`: a validation loss at steps 2, 4, 6, ... (saved whole: temp and rename,
// so a reader sees the old file or the new one).
void save(const fs::path& dir, int id, const std::string& state, const std::vector<double>& losses) {
  record::TrialRecord trial;
  trial.experiment = "watch";
  trial.trial_id = id;
  trial.state = state;
  for (std::size_t i = 0; i < losses.size(); ++i) {
    trial.validation.append(static_cast<std::int64_t>(i + 1) * 2, {{"loss", losses[i]}});
  }
  fs::create_directories(dir / "trials" / std::to_string(id));
  record::save_trial_record(trial, dir / "trials" / std::to_string(id) / "trial.h5");
}

// Two trials of an ASHA search, both handed out by the searcher (so each has a target length):
// trial 0 as `first_state`, trial 1 completed.
void make_experiment(const fs::path& dir, const std::string& first_state) {
  spit(dir / "experiment.yaml",
       "name: watch\nentrypoint: [unused]\nseed: 7\n"
       "hyperparameters:\n  x: {type: double, minval: 0, maxval: 1}\n"
       "searcher: {name: async_halving, metric: loss, max_trials: 2, divisor: 2, max_rungs: 2,\n"
       "           max_length: {batches: 32}, stop_once: false}\n");
  const auto experiment = config::load_snapshot(dir);
  searcher::Coordinator coordinator(experiment, dir / searcher::kJournalFileName);
  REQUIRE(coordinator.request_work(0).kind == searcher::Work::Kind::train);
  REQUIRE(coordinator.request_work(1).kind == searcher::Work::Kind::train);
  save(dir, 0, first_state, {0.9, 0.5, 0.1});
  save(dir, 1, "completed", {0.7, 0.6});
}

// An ASHA search with promotions (stop_once: false: the losers of a rung are paused, in case a
// later ticket promotes them), its first `tickets` array tasks run one after another as dlx-launch
// runs them: each asks the searcher for work, its trial reports at each target until the searcher
// decides, trial.h5 is written in the state decided, and a paused trial posts its exit. Trial 3
// learns best. The last `unasked` tasks do not run. Returns the number of array tasks of the search.
int run_asha_search(const fs::path& dir, int unasked = 0) {
  spit(dir / "experiment.yaml",
       "name: watch\nentrypoint: [unused]\nseed: 7\n"
       "hyperparameters:\n  x: {type: double, minval: 0, maxval: 1}\n"
       "searcher: {name: async_halving, metric: loss, max_trials: 4, divisor: 2, max_rungs: 2,\n"
       "           max_length: {batches: 8}, stop_once: false}\n");
  const auto experiment = config::load_snapshot(dir);
  const int all = searcher::ticket_count(experiment);
  searcher::Coordinator coordinator(experiment, dir / searcher::kJournalFileName);
  std::map<int, std::vector<double>> losses;
  for (int ticket = 0; ticket < all - unasked; ++ticket) {
    const auto work = coordinator.request_work(ticket);
    REQUIRE(work.kind != searcher::Work::Kind::wait);  // one task at a time: nothing runs meanwhile
    if (work.kind == searcher::Work::Kind::none) continue;
    for (std::int64_t length = work.target_length;;) {
      const double loss = 1.0 / (1 + work.trial) + 1.0 / static_cast<double>(length);
      losses[work.trial].push_back(loss);
      const auto decision = coordinator.report_validation(work.trial, length, loss);
      if (decision.kind == searcher::Decision::Kind::continue_training) {
        length = decision.target_length;
        continue;
      }
      const bool paused = decision.kind == searcher::Decision::Kind::pause;
      save(dir, work.trial, paused ? "paused" : decision.kind == searcher::Decision::Kind::stop ? "stopped" : "completed",
           losses[work.trial]);
      if (paused) coordinator.report_exit(work.trial, searcher::ExitKind::paused, decision.reason);
      break;
    }
  }
  return all;
}

}  // namespace

TEST_CASE("dlx status --watch: every trial ended: the table once, exit 0 at once", "[cli][watch]") {
  TempDir dir;
  make_experiment(dir.path, "failed");
  const auto run = run_dlx({"status", "--watch", "0.5", dir.path.string()});
  INFO(run.out << run.err);
  REQUIRE(run.status == 0);
  CHECK(run.seconds < 5);
  CHECK(count(run.out, "# ---- ") == 1);
  CHECK(count(run.out, "# trial  state") == 1);
  CHECK_THAT(run.out, Catch::Contains("2 of 2 trials ended\n"));
  CHECK_THAT(run.out, Catch::Contains("# 2 trials: 1 completed, 1 failed\n"));
}

TEST_CASE("dlx status --watch: a running trial: frames after time lines until SIGINT or SIGTERM, exit 0",
          "[cli][watch]") {
  TempDir dir;
  make_experiment(dir.path, "running");
  const int signal = GENERATE(SIGINT, SIGTERM);
  INFO("signal " << signal);
  const auto run = run_dlx({"status", dir.path.string(), "--watch", "0.5"}, 1.5, signal);
  INFO(run.out << run.err);
  REQUIRE(run.status == 0);
  CHECK(count(run.out, "# ---- ") >= 2);
  CHECK(count(run.out, "# trial  state") == count(run.out, "# ---- "));
  CHECK(run.out.find('\x1b') == std::string::npos);  // stdout is a file: no cursor movement
  // The running trial's progress to its target (from the journal), the completed one counted.
  CHECK_THAT(run.out, Catch::Contains("1 of 2 trials ended; running: trial 0 step 6 of "));
  // Not a terminal: no sparkline unless asked for.
  CHECK(run.out.find("▁") == std::string::npos);
}

TEST_CASE("dlx status --watch: live progress: later steps in later frames, and an ETA once the trial moves",
          "[cli][watch]") {
  TempDir dir;
  make_experiment(dir.path, "running");
  // The trainer: one more validation (2 steps) after each frame dlx has printed, from step 6 to
  // step 14 (target 16); SIGINT once the frame after the last one is out.
  std::vector<double> losses{0.9, 0.5, 0.1};
  const auto report = [&](const std::string& out) {
    const auto frames = count(out, "# 2 trials: ");  // each frame's last line but one
    while (losses.size() < 7 && losses.size() - 3 < frames) {
      losses.push_back(0.1 / static_cast<double>(losses.size()));
      save(dir.path, 0, "running", losses);
    }
    return frames >= 6;
  };
  const auto run = run_dlx({"status", dir.path.string(), "--watch", "0.5"}, std::nullopt, SIGINT, report);
  INFO(run.out << run.err);
  REQUIRE(run.status == 0);
  const auto first_frame = run.out.find("running: trial 0 step 6 of 16");
  const auto later_frame = run.out.find("running: trial 0 step 14 of 16");
  CHECK(first_frame != std::string::npos);
  CHECK(later_frame != std::string::npos);
  CHECK(first_frame < later_frame);
  // The first frame has no rate to go by; a frame after the trial moved has one.
  CHECK(run.out.substr(0, run.out.find('\n', first_frame)).find("; eta ") == std::string::npos);
  CHECK_THAT(run.out, Catch::Contains("; eta "));
}

TEST_CASE("dlx status --watch: a warning on the journal is said once, not every frame", "[cli][watch]") {
  TempDir dir;
  make_experiment(dir.path, "running");
  spit(dir.path / searcher::kJournalSnapshotFileName, "not a snapshot");
  const auto run = run_dlx({"status", dir.path.string(), "--watch", "0.5"}, 1.5, SIGINT);
  INFO(run.out << run.err);
  REQUIRE(run.status == 0);
  CHECK(count(run.out, "# ---- ") >= 2);
  CHECK(count(run.err, "dlx status: warning: ") == 1);
}

TEST_CASE("dlx status --watch --json: one JSON document per line per frame", "[cli][watch]") {
  TempDir dir;
  make_experiment(dir.path, "running");
  const auto run = run_dlx({"status", "--json", "--watch", "0.5", dir.path.string()}, 1.5, SIGINT);
  INFO(run.out << run.err);
  REQUIRE(run.status == 0);
  std::istringstream lines(run.out);
  std::size_t documents = 0;
  for (std::string line; std::getline(lines, line); ++documents) {
    const auto document = nlohmann::json::parse(line);  // throws (fails) on anything but one document
    CHECK(document["trials"].size() == 2);
    CHECK(document["progress"]["ended"] == 1);
    CHECK(document["progress"]["running"][0]["step"] == 6);
  }
  CHECK(documents >= 2);
}

TEST_CASE("dlx status --sparklines: each trial's validation curve, also to a file", "[cli][watch]") {
  TempDir dir;
  make_experiment(dir.path, "failed");
  const auto run = run_dlx({"status", dir.path.string(), "--sparklines"});
  INFO(run.out << run.err);
  REQUIRE(run.status == 0);
  CHECK_THAT(run.out, Catch::Contains("loss curve\n"));
  CHECK_THAT(run.out, Catch::Contains("█▅▁\n"));  // 0.9, 0.5, 0.1
  CHECK_THAT(run.out, Catch::Contains("█▁\n"));   // 0.7, 0.6
}

TEST_CASE("dlx status --watch: bad SECONDS and a directory that is not an experiment are refused", "[cli][watch]") {
  TempDir dir;
  make_experiment(dir.path, "running");
  const auto zero = run_dlx({"status", "--watch", "0", dir.path.string()});
  CHECK(zero.status == 2);
  CHECK_THAT(zero.err, Catch::StartsWith("dlx: --watch: 0 seconds is out of range (give SECONDS from 0.5 to 3600)\n"));
  const auto word = run_dlx({"status", dir.path.string(), "--watch", "abc"});
  CHECK(word.status == 2);
  CHECK_THAT(word.err, Catch::StartsWith("dlx: --watch: 'abc' is not a number of seconds"));
  TempDir empty;
  const auto elsewhere = run_dlx({"status", "--watch", "0.5", empty.path.string()});
  CHECK(elsewhere.status == 1);
  CHECK_THAT(elsewhere.err, Catch::Contains("is not an experiment directory"));
  CHECK(elsewhere.out.empty());
}

TEST_CASE("dlx status --watch: a search that ends with trials paused for good ends the watch too", "[cli][watch]") {
  // It used to wait for every trial to complete, which the paused losers of ASHA's promotion
  // variant (and PBT's) never do: --watch ran until Ctrl-C after the experiment had finished.
  TempDir dir;
  const int tickets = run_asha_search(dir.path);
  REQUIRE(tickets > 4);  // the trials, and the promotions a later task may run
  SECTION("the table") {
    const auto run = run_dlx({"status", "--watch", "0.5", dir.path.string()});
    INFO(run.out << run.err);
    REQUIRE(run.status == 0);  // by itself: a run still going after 15 s is killed (-1)
    CHECK(count(run.out, "# ---- ") == 1);
    const auto at = run.out.find(" trials ended");
    REQUIRE(at != std::string::npos);
    const auto start = run.out.rfind('\n', at) + 1;
    CHECK_THAT(run.out.substr(start, run.out.find('\n', at) - start),
               Catch::Matches("# .* [1-3] of 4 trials ended; the searcher has finished, leaving [1-3] paused"));
  }
  SECTION("JSON Lines") {
    const auto run = run_dlx({"status", "--json", "--watch", "0.5", dir.path.string()});
    INFO(run.out << run.err);
    REQUIRE(run.status == 0);
    REQUIRE(count(run.out, "\n") == 1);  // one frame
    const auto document = nlohmann::json::parse(run.out);
    CHECK(document["progress"]["finished"] == true);
    CHECK(document["progress"]["ended"] < 4);
  }
}

TEST_CASE("dlx status --watch: nothing running is not the end while an array task has had no answer",
          "[cli][watch]") {
  // Every trial so far paused or completed, but the last task (a promotion it may run) has not
  // asked yet: the watch goes on until SIGINT.
  TempDir dir;
  run_asha_search(dir.path, 1);
  const auto run = run_dlx({"status", "--watch", "0.5", dir.path.string()}, 1.5, SIGINT);
  INFO(run.out << run.err);
  REQUIRE(run.status == 0);
  CHECK(count(run.out, "# ---- ") >= 2);
  CHECK_THAT(run.out, !Catch::Contains("the searcher has finished"));
}
