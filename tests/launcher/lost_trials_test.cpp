// SPDX-License-Identifier: Apache-2.0
// Trials whose array task ended without a word (launcher/launch/include/dlx/launch/lost_trials.hpp):
// which of Slurm's states have ended, which trials of the journal are suspect against squeue's
// listing, and the confirmation over time that keeps a requeue in passing from being taken for one.
#include <catch2/catch.hpp>

#include <chrono>

#include "dlx/launch/lost_trials.hpp"
#include "dlx/searcher/search_state.hpp"
#include "asha_state_fixture.hpp"

using dlx::launch::LostTrial;
using dlx::launch::LostTrialWatch;
using dlx::slurm::ArrayTask;
using dlx::slurm::task_has_ended;
using namespace std::chrono_literals;

namespace {

// The state after `work` was recorded (each (ticket, trial) pair trains that trial), then the
// `exits` (trial, how).
dlx::searcher::SearchState lost_state(const std::vector<std::pair<int, int>>& work,
                                      const std::vector<std::pair<int, dlx::searcher::ExitKind>>& exits = {}) {
  auto state = dlx::test::asha_state_with_work(work);
  std::uint64_t offset = work.size();
  for (const auto& [trial, how] : exits) {
    state.apply_answered({offset++, dlx::searcher::SearchState::exit_event(trial, how, "", 0, 0)});
  }
  return state;
}

ArrayTask task_in(const char* state) { return ArrayTask{state, "None", 0}; }

}  // namespace

TEST_CASE("lost trials: which of Slurm's task states have ended", "[launch]") {
  for (const char* ended : {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
                            "BOOT_FAIL", "DEADLINE", "REVOKED", "LAUNCH_FAILED"}) {
    INFO(ended);
    CHECK(task_has_ended(task_in(ended)));
  }
  // Still running, or may run again; and a state this version does not know is never taken for ended.
  for (const char* live : {"PENDING", "REQUEUED", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUE_HOLD",
                           "REQUEUE_FED", "RESIZING", "STOPPED", "SPECIAL_EXIT", "SIGNALING", "STAGE_OUT",
                           "SOME_NEW_STATE", ""}) {
    INFO(live);
    CHECK_FALSE(task_has_ended(task_in(live)));
  }
}

TEST_CASE("lost trials: a running trial whose task ended, or is no longer listed, is suspect", "[launch]") {
  const auto experiment = dlx::test::asha_example();
  const auto state = lost_state({{0, 0}, {1, 1}, {2, 2}});
  using dlx::launch::suspect_lost_trials;
  SECTION("cancelled, and forgotten after MinJobAge") {
    const auto suspects = suspect_lost_trials(
        state, experiment, {{0, task_in("RUNNING")}, {1, task_in("CANCELLED")}, {5, task_in("RUNNING")}}, 5);
    REQUIRE(suspects.size() == 2);
    CHECK(suspects[0].seen.id == 1);
    CHECK(suspects[0].task == 1);
    CHECK(suspects[0].task_state == "CANCELLED");
    CHECK(suspects[1].seen.id == 2);  // task 2 is not listed at all
    CHECK(suspects[1].task_state.empty());
    CHECK(suspects[1].seen.status == "running");
  }
  SECTION("a task pending again after a requeue, or running, is not") {
    CHECK(suspect_lost_trials(state, experiment,
                              {{0, task_in("PENDING")}, {1, task_in("REQUEUED")}, {2, task_in("COMPLETING")},
                               {5, task_in("RUNNING")}},
                              5)
              .empty());
  }
  SECTION("nothing is judged on a listing without the asking task, or one where it has ended") {
    CHECK(suspect_lost_trials(state, experiment, {{1, task_in("CANCELLED")}}, 5).empty());
    CHECK(suspect_lost_trials(state, experiment, {{1, task_in("CANCELLED")}, {5, task_in("CANCELLED")}}, 5).empty());
    CHECK(suspect_lost_trials(state, experiment, {}, 5).empty());
  }
  SECTION("the asking task's own trial is not") {
    const auto suspects = suspect_lost_trials(state, experiment, {{1, task_in("RUNNING")}}, 1);
    REQUIRE(suspects.size() == 2);
    CHECK(suspects[0].seen.id == 0);
    CHECK(suspects[1].seen.id == 2);
  }
}

TEST_CASE("lost trials: only unfinished trials are suspect, and a settled pause is not", "[launch]") {
  using dlx::searcher::ExitKind;
  const auto experiment = dlx::test::asha_example();
  auto state = lost_state({{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}},
                          {{0, ExitKind::completed}, {1, ExitKind::failed}, {2, ExitKind::stopped}});
  // Trials 4 and 5 pause at a rung; only 5's task settles the pause before it ends.
  dlx::searcher::Decision pause;
  pause.kind = dlx::searcher::Decision::Kind::pause;
  state.apply_answered({100, dlx::searcher::SearchState::validation_event(4, 16, 0.5, pause, 0)});
  state.apply_answered({101, dlx::searcher::SearchState::validation_event(5, 16, 0.4, pause, 0)});
  state.apply_answered({102, dlx::searcher::SearchState::exit_event(5, ExitKind::paused, "", 16, 0)});
  REQUIRE(state.trials().at(4).status == "paused");
  REQUIRE_FALSE(state.trials().at(4).settled);
  REQUIRE(state.trials().at(5).settled);
  const std::map<int, ArrayTask> ended{{0, task_in("COMPLETED")}, {1, task_in("FAILED")},
                                       {2, task_in("COMPLETED")}, {3, task_in("CANCELLED")},
                                       {4, task_in("NODE_FAIL")},  {5, task_in("COMPLETED")},
                                       {7, task_in("RUNNING")}};
  const auto suspects = dlx::launch::suspect_lost_trials(state, experiment, ended, 7);
  REQUIRE(suspects.size() == 2);
  CHECK(suspects[0].seen.id == 3);
  CHECK(suspects[1].seen.id == 4);
  CHECK(suspects[1].seen.status == "paused");
}

TEST_CASE("lost trials: a suspect is lost only when it stays suspect, unchanged, for the confirmation time",
          "[launch]") {
  LostTrialWatch watch(60s);
  const auto t0 = LostTrialWatch::Clock::time_point{} + 1000s;
  LostTrial one;
  one.seen.id = 4;
  one.seen.status = "running";
  one.seen.ticket = 4;
  one.seen.last_length = 8;
  one.task = 4;
  one.task_state = "NODE_FAIL";
  CHECK(watch.confirm({one}, t0).empty());
  CHECK(watch.confirm({one}, t0 + 59s).empty());
  const auto lost = watch.confirm({one}, t0 + 60s);
  REQUIRE(lost.size() == 1);
  CHECK(lost[0].seen.id == 4);

  SECTION("a check where it is not suspect (requeued: PENDING) starts again") {
    CHECK(watch.confirm({}, t0 + 70s).empty());
    CHECK(watch.confirm({one}, t0 + 80s).empty());
    CHECK(watch.confirm({one}, t0 + 139s).empty());
    CHECK(watch.confirm({one}, t0 + 140s).size() == 1);
  }
  SECTION("a trial that changed in the journal meanwhile (it reported) starts again") {
    auto moved = one;
    moved.seen.last_length = 16;
    CHECK(watch.confirm({moved}, t0 + 70s).empty());
    CHECK(watch.confirm({moved}, t0 + 130s).size() == 1);
  }
}

TEST_CASE("lost trials: the detail names the task, what Slurm said and who found it", "[launch]") {
  LostTrial lost;
  lost.seen.id = 3;
  lost.seen.status = "running";
  lost.task = 3;
  lost.task_state = "CANCELLED";
  CHECK(dlx::launch::lost_trial_detail(lost, "12", 7) ==
        "lost: its array task 12_3 ended (CANCELLED) without reporting to the searcher; no run will continue it "
        "(found by ticket 7)");
  lost.task_state.clear();
  lost.seen.status = "paused";
  CHECK(dlx::launch::lost_trial_detail(lost, "12", 7) ==
        "lost: its array task 12_3 ended and Slurm no longer lists it without reporting to the searcher; its pause "
        "is settled for it, so that it can be promoted (found by ticket 7)");
}
