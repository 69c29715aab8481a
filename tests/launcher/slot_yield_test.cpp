// SPDX-License-Identifier: Apache-2.0
// Which tickets yield their array slot to a requeued trial (launcher/launch/include/dlx/launch/
// slot_yield.hpp): squeue's answer parsed, and the journal's running trials matched against it.
#include <catch2/catch.hpp>

#include "dlx/launch/slot_yield.hpp"
#include "dlx/searcher/search_state.hpp"
#include "asha_state_fixture.hpp"

using dlx::launch::PendingTask;

using dlx::test::asha_state_with_work;

TEST_CASE("slot yield: squeue's pending tasks", "[launch]") {
  const auto tasks = dlx::slurm::parse_array_tasks(
      "3               BeginTime                                                       1         \n"
      "7               JobArrayTaskLimit                                               0         \n"
      "N/A             Priority                                                        0         \n"
      "garbage\n",
      false, "PENDING");
  REQUIRE(tasks.size() == 2);
  CHECK(tasks.at(3).reason == "BeginTime");
  CHECK(tasks.at(3).restarts == 1);
  CHECK(tasks.at(3).state == "PENDING");
  CHECK(tasks.at(7).reason == "JobArrayTaskLimit");
  CHECK(dlx::slurm::parse_array_tasks("", false).empty());
}

TEST_CASE("squeue's array tasks with their state, as dlx status asks", "[launch]") {
  const auto tasks = dlx::slurm::parse_array_tasks(
      "0               RUNNING                 None                                            0         \n"
      "12              PENDING                 launch_failed_requeued_held                     1         \n"
      "N/A             PENDING                 None                                            0         \n"
      "4               COMPLETED\n",  // a line cut short: skipped
      true);
  REQUIRE(tasks.size() == 2);
  CHECK(tasks.at(0).state == "RUNNING");
  CHECK(tasks.at(0).reason == "None");
  CHECK(tasks.at(12).state == "PENDING");
  CHECK(tasks.at(12).reason == "launch_failed_requeued_held");
  CHECK(tasks.at(12).restarts == 1);
}

TEST_CASE("slot yield: a ticket yields to a running trial whose task waits for its turn", "[launch]") {
  const auto state = asha_state_with_work({{0, 0}, {1, 1}});
  using dlx::launch::trial_to_resume;
  SECTION("trial 1's task is pending after its requeue") {
    const auto resume = trial_to_resume(state, 5, {{1, PendingTask{"PENDING", "BeginTime", 1}}});
    REQUIRE(resume);
    CHECK(resume->trial == 1);
    CHECK(resume->ticket == 1);
    CHECK(resume->reason == "BeginTime");
    CHECK(trial_to_resume(state, 5, {{1, PendingTask{"PENDING", "JobArrayTaskLimit", 1}}}));
    // Requeued by its own exit 85 (a crash restart, a checkpoint on a notice).
    CHECK(trial_to_resume(state, 5, {{1, PendingTask{"PENDING", "NonZeroExitCode", 1}}}));
  }
  SECTION("not to itself, not to a task that never ran a trial, not to a held one") {
    CHECK_FALSE(trial_to_resume(state, 1, {{1, PendingTask{"PENDING", "BeginTime", 1}}}));
    CHECK_FALSE(trial_to_resume(state, 5, {{6, PendingTask{"PENDING", "JobArrayTaskLimit", 1}}}));
    CHECK_FALSE(trial_to_resume(state, 5, {{1, PendingTask{"PENDING", "launch_failed_requeued_held", 1}}}));
    CHECK_FALSE(trial_to_resume(state, 5, {{1, PendingTask{"PENDING", "JobHeldUser", 1}}}));
    CHECK_FALSE(trial_to_resume(state, 5, {}));
  }
  SECTION("tasks that run several tickets in turn: ticket 5 of 4 tasks runs in task 1") {
    const auto lanes = asha_state_with_work({{0, 0}, {5, 5}});
    const auto resume = trial_to_resume(lanes, 2, {{1, PendingTask{"PENDING", "BeginTime", 1}}}, 4);
    REQUIRE(resume);
    CHECK(resume->trial == 5);
    CHECK(resume->ticket == 5);
    CHECK_FALSE(trial_to_resume(lanes, 9, {{1, PendingTask{"PENDING", "BeginTime", 1}}}, 4));  // its own task
    CHECK_FALSE(trial_to_resume(lanes, 2, {{5, PendingTask{"PENDING", "BeginTime", 1}}}, 4));  // no task 5
  }
}
