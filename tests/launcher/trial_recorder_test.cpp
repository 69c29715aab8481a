// SPDX-License-Identifier: Apache-2.0
// Rank 0's record keeper (launcher/sdk/src/trial_recorder.hpp): which starts of a trial are
// restarts. A run of a trial whose record is still "running" with a higher SLURM_RESTART_COUNT
// resumes work that was cut short (a restart, with its cause); a paused trial resumed by the
// searcher (an ASHA promotion, in whichever array task, whatever its restart count) is new work.
// A run that recorded no exit has its cause from the notice dlx-launch kept, if any.
#include <signal.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "dlx/env/notice_marker.hpp"
#include "dlx/env/trial_environment.hpp"
#include "dlx/record/trial_record.hpp"
#include "process_helpers.hpp"
#include "trial_recorder.hpp"

namespace {

dlx::env::TrialEnvironment environment(const std::filesystem::path& dir, int restarts) {
  return dlx::env::read_trial_environment({{"DLX_EXPERIMENT_DIR", dir.string()},
                                           {"DLX_TRIAL_ID", "3"},
                                           {"DLX_HPARAMS", R"({"lr":0.1})"},
                                           {"SLURM_ARRAY_JOB_ID", "900"},
                                           {"SLURM_ARRAY_TASK_ID", "7"},
                                           {"SLURM_JOB_ID", "913"},
                                           {"SLURM_RESTART_COUNT", std::to_string(restarts)}});
}

void save(const std::filesystem::path& path, const std::string& state, const std::string& reason) {
  dlx::record::TrialRecord record;
  record.experiment = "e";
  record.trial_id = 3;
  record.state = state;
  record.stop_reason = reason;
  record.training.append(16, {{"loss", 0.5}});
  std::filesystem::create_directories(path.parent_path());
  dlx::record::save_trial_record(record, path);
}

}  // namespace

TEST_CASE("trial recorder: a promotion of a paused trial is not a restart, a requeue is", "[unit][trial_record]") {
  dlx::test::TempDir dir("recorder");
  const auto env = environment(dir.path(), 1);  // a ticket that gave its slot back once
  SECTION("paused by the searcher, resumed by a promotion") {
    save(env.record_path(), "paused", "rung 0 (length 16): loss 0.5 is 2nd of 4, waits for promotion");
    { dlx::detail::TrialRecorder recorder(env, "e", 1, "n1", {}); }
    const auto record = dlx::record::load_trial_record(env.record_path());
    CHECK(record.restart_events.empty());
    CHECK(record.state == "running");
    CHECK(record.restarts == 1);
  }
  SECTION("still running when its run ended: a restart with the cause the previous run recorded") {
    save(env.record_path(), "running", "requeue: checkpoint at step 16 after SIGTERM");
    { dlx::detail::TrialRecorder recorder(env, "e", 1, "n1", {}); }
    const auto record = dlx::record::load_trial_record(env.record_path());
    REQUIRE(record.restart_events.size() == 1);
    CHECK(record.restart_events[0].cause == "notice");
  }
}

TEST_CASE("trial recorder: a restart with no checkpoint to resume from lost the previous run's training",
          "[unit][trial_record]") {
  // A requeue that SIGKILLed the trainer inside a batch longer than KillWait, before any
  // checkpoint: the requeued run starts from nothing, so its restart event counts every step and
  // second the previous run trained (it used to say 0 seconds lost: only a resume set them).
  dlx::test::TempDir dir("recorder-lost");
  const auto env = environment(dir.path(), 2);
  dlx::record::TrialRecord record;
  record.experiment = "e";
  record.trial_id = 3;
  record.state = "running";
  record.restarts = 1;
  record.created_unix = 1000;
  record.updated_unix = 1400;
  record.training.append(16, {{"loss", 0.5}});
  std::filesystem::create_directories(env.record_path().parent_path());
  SECTION("the first run") {
    record.restarts = 0;
    dlx::record::save_trial_record(record, env.record_path());
    { dlx::detail::TrialRecorder recorder(env, "e", 1, "n1", {}); }
    const auto saved = dlx::record::load_trial_record(env.record_path());
    REQUIRE(saved.restart_events.size() == 1);
    CHECK(saved.restart_events[0].steps_lost == 16);
    CHECK(saved.restart_events[0].seconds_lost >= 400);  // the metric's wall time may be later
  }
  SECTION("a run that was itself a restart: from that restart") {
    record.restart_events.push_back({.cause = "notice", .reason = "requeue", .unix_time = 1300, .resumed_step = 0,
                                     .steps_lost = 0, .seconds_lost = 0, .downtime_seconds = 0,
                                     .previous_nodes = "n1"});
    record.training = {};
    record.updated_unix = 1390;
    dlx::record::save_trial_record(record, env.record_path());
    { dlx::detail::TrialRecorder recorder(env, "e", 1, "n1", {}); }
    const auto saved = dlx::record::load_trial_record(env.record_path());
    REQUIRE(saved.restart_events.size() == 2);
    CHECK(saved.restart_events[1].seconds_lost == 90);
  }
}

TEST_CASE("trial recorder: a run killed after a notice it could not act on restarts with the notice's cause",
          "[unit][trial_record]") {
  // The previous run (restart 0 of array task 900_7) recorded no exit; its rank 0's dlx-launch
  // kept the notice it got (notice_marker.hpp): SIGUSR2 with 40 s left before the time limit.
  dlx::test::TempDir dir("recorder-notice");
  const auto env = environment(dir.path(), 1);
  dlx::record::TrialRecord record;
  record.experiment = "e";
  record.trial_id = 3;
  record.state = "running";
  record.restarts = 0;
  record.slurm_job_id = "900_7";
  std::filesystem::create_directories(env.record_path().parent_path());
  dlx::record::save_trial_record(record, env.record_path());
  const auto trial_dir = env.record_path().parent_path();
  dlx::env::NoticeMarker marker{"900_7", 0, SIGUSR2, 1'764'656'000, "1764656040"};
  SECTION("the marker of that run: its cause, and a reason that says the trainer did not save") {
    dlx::env::write_notice_marker(trial_dir, marker);
    REQUIRE(dlx::env::read_notice_marker(trial_dir) == marker);
    { dlx::detail::TrialRecorder recorder(env, "e", 1, "n1", {}); }
    const auto saved = dlx::record::load_trial_record(env.record_path());
    REQUIRE(saved.restart_events.size() == 1);
    CHECK(saved.restart_events[0].cause == "time_limit");
    CHECK(saved.restart_events[0].reason ==
          "killed before it could checkpoint: a notice came at 2025-12-02T06:13:20Z (SIGUSR2 with 40 s left before "
          "the job's time limit) and the run recorded no exit (a batch or a save longer than Slurm's time between "
          "the notice and the kill)");
  }
  SECTION("an older run's marker, or none: unknown, as before") {
    marker.restarts = 1;  // a later run than the record's: not the previous run's
    dlx::env::write_notice_marker(trial_dir, marker);
    { dlx::detail::TrialRecorder recorder(env, "e", 1, "n1", {}); }
    const auto saved = dlx::record::load_trial_record(env.record_path());
    REQUIRE(saved.restart_events.size() == 1);
    CHECK(saved.restart_events[0].cause == "unknown");
    CHECK(saved.restart_events[0].reason == "no exit recorded (node failure, or killed)");
  }
  SECTION("a damaged marker is none") {
    std::ofstream(trial_dir / dlx::env::kNoticeMarkerName) << "{\"slurm_job_id\": \"900_7\", \"restarts\": ";
    CHECK_FALSE(dlx::env::read_notice_marker(trial_dir));
    { dlx::detail::TrialRecorder recorder(env, "e", 1, "n1", {}); }
    CHECK(dlx::record::load_trial_record(env.record_path()).restart_events.at(0).cause == "unknown");
  }
}
