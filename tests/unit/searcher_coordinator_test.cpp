// SPDX-License-Identifier: Apache-2.0
// The daemonless coordinator: several "processes" (Coordinator instances, each with its own view)
// asking through one journal file; idempotent questions; a pause settled before promotion; replay
// equal to the live state; a journal from a different searcher refused.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "dlx/config/parse.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/searcher/search_state.hpp"
#include "searcher_temp_dir.hpp"

using namespace dlx;
using searcher::Coordinator;
using searcher::Decision;
using searcher::Work;

namespace {

using dlx::testing::TempDir;

config::Experiment asha(bool stop_once, int max_trials = 4) {
  return config::parse_experiment(
      fmt::format("name: t\nentrypoint: x\nseed: 3\nsearcher: {{name: async_halving, metric: loss, "
                  "max_trials: {}, divisor: 2, max_rungs: 2, max_length: {{batches: 8}}, "
                  "stop_once: {}}}\nhyperparameters:\n  x: {{type: double, minval: 0, maxval: 1}}\n",
                  max_trials, stop_once),
      "t.yaml");
}

config::Experiment grid() {
  return config::parse_experiment(
      "name: g\nentrypoint: x\nsearcher: {name: grid, metric: loss}\n"
      "hyperparameters:\n  lr: {type: categorical, vals: [1, 2, 3]}\n",
      "g.yaml");
}

nlohmann::json replayed(const config::Experiment& experiment, const TempDir& dir) {
  return searcher::replay_journal(experiment, searcher::Journal(dir.journal()).read()).to_json();
}

}  // namespace

TEST_CASE("coordinator: a ticket's work is recorded once and read back by its other ranks") {
  TempDir dir;
  Coordinator rank0(grid(), dir.journal()), rank1(grid(), dir.journal());
  const Work first = rank0.request_work(2);
  REQUIRE(first.kind == Work::Kind::train);
  CHECK(first.trial == 2);
  CHECK(first.hparams["lr"] == 3);
  const Work again = rank1.request_work(2);
  CHECK(again.trial == 2);
  CHECK(again.hparams == first.hparams);
  CHECK(again.reason.find("again") != std::string::npos);
  CHECK(searcher::Journal(dir.journal()).read().records.size() == 1);
  CHECK(rank0.request_work(3).kind == Work::Kind::none);  // the grid has 3 points
}

TEST_CASE("coordinator: stopping ASHA over two processes, replay equals the live state") {
  TempDir dir;
  const auto experiment = asha(true);
  Coordinator a(experiment, dir.journal()), b(experiment, dir.journal());
  for (int ticket = 0; ticket < 4; ++ticket) {
    auto& who = ticket % 2 == 0 ? a : b;
    const Work work = who.request_work(ticket);
    REQUIRE(work.kind == Work::Kind::train);
    CHECK(work.target_length == 4);
  }
  // Losses 0.4, 0.3, 0.2, 0.1 at rung 0 (length 4): each is the best so far, so each goes on.
  const Decision d0 = a.report_validation(0, 4, 0.4);
  CHECK(d0.kind == Decision::Kind::continue_training);
  CHECK(d0.target_length == 8);
  // A worse result after a better one stops (top 1/2 of 2 results is 1 trial).
  CHECK(b.report_validation(1, 4, 0.9).kind == Decision::Kind::stop);
  // The same question again (a resumed trial, another rank) gets the recorded answer.
  const Decision repeat = a.report_validation(1, 4, 0.9);
  CHECK(repeat.kind == Decision::Kind::stop);
  CHECK(repeat.reason == b.state().trials().at(1).reason);
  CHECK(a.report_validation(0, 8, 0.2).kind == Decision::Kind::complete);
  // A diverged trial (NaN) counts as the worst result, never as a JSON null.
  CHECK(b.report_validation(2, 4, std::nan("")).kind == Decision::Kind::stop);
  a.refresh();
  CHECK(a.state().to_json() == replayed(experiment, dir));
  CHECK(a.state().best_trial() == 0);
  CHECK(searcher::Journal(dir.journal()).read().records.size() == 4 + 4);
}

TEST_CASE("coordinator: a paused trial is promoted only after its task settled the pause") {
  TempDir dir;
  const auto experiment = asha(false, 2);
  Coordinator task0(experiment, dir.journal()), task1(experiment, dir.journal()),
      task2(experiment, dir.journal());
  REQUIRE(task0.request_work(0).trial == 0);
  REQUIRE(task1.request_work(1).trial == 1);
  // Trial 1 reports first and pauses (nothing to be in the top half of yet)...
  CHECK(task1.report_validation(1, 4, 0.9).kind == Decision::Kind::pause);
  // ... trial 0 reports a better loss: in the top 1 of 2, it goes on in place; trial 0 at the
  // top rung later completes. Trial 1 is not promotable, so ticket 2 has nothing to do while 0
  // runs: it waits.
  CHECK(task0.report_validation(0, 4, 0.1).kind == Decision::Kind::continue_training);
  CHECK(task2.request_work(2).kind == Work::Kind::wait);
  CHECK(task0.report_validation(0, 8, 0.05).kind == Decision::Kind::complete);
  const auto journal_events = searcher::Journal(dir.journal()).read().records.size();
  const Work later = task2.request_work(2);
  // Every trial is done with: ticket 2 either resumes nothing or promotes; whatever the method
  // says, an unsettled pause is never handed out.
  if (later.kind == Work::Kind::train) CHECK(task2.state().trials().at(later.trial).settled);
  CHECK(searcher::Journal(dir.journal()).read().records.size() >= journal_events);
  CHECK(task2.state().to_json() == replayed(experiment, dir));
}

TEST_CASE("coordinator: an unsettled pause makes a promoting ticket wait, a settled one resumes") {
  TempDir dir;
  // Three trials, divisor 2: at rung 0 the top floor(n/2) are promotable.
  const auto experiment = asha(false, 3);
  Coordinator t0(experiment, dir.journal()), t1(experiment, dir.journal()), t2(experiment, dir.journal()),
      t3(experiment, dir.journal());
  REQUIRE(t0.request_work(0).kind == Work::Kind::train);
  REQUIRE(t1.request_work(1).kind == Work::Kind::train);
  CHECK(t0.report_validation(0, 4, 0.1).kind == Decision::Kind::pause);  // 1 result: quota 0
  CHECK(t1.report_validation(1, 4, 0.5).kind == Decision::Kind::pause);  // 2 results: 0 is top 1
  // Ticket 3 would promote trial 0, whose task has not settled its pause yet: wait, unrecorded.
  const auto before = searcher::Journal(dir.journal()).read().records.size();
  const Work blocked = t3.request_work(3);
  CHECK(blocked.kind == Work::Kind::wait);
  CHECK(blocked.reason.find("pausing") != std::string::npos);
  CHECK(searcher::Journal(dir.journal()).read().records.size() == before);
  t0.report_exit(0, searcher::ExitKind::paused, "paused at rung 0");
  const Work resumed = t3.request_work(3);
  REQUIRE(resumed.kind == Work::Kind::train);
  CHECK(resumed.trial == 0);
  CHECK(resumed.start_length == 4);
  CHECK(resumed.checkpoint_trial == 0);
  CHECK(resumed.target_length == 8);
  CHECK(t3.state().to_json() == replayed(experiment, dir));
}

TEST_CASE("coordinator: a requeued ticket whose trainer died after a pause settles it") {
  TempDir dir;
  const auto experiment = asha(false, 3);
  Coordinator t0(experiment, dir.journal());
  REQUIRE(t0.request_work(0).kind == Work::Kind::train);
  CHECK(t0.report_validation(0, 4, 0.1).kind == Decision::Kind::pause);
  Coordinator requeued(experiment, dir.journal());
  const Work again = requeued.request_work(0);
  CHECK(again.kind == Work::Kind::none);
  CHECK(again.reason == "ticket 0's trial 0 is already paused");
  CHECK(requeued.state().trials().at(0).settled);
}

TEST_CASE("coordinator: a lost running trial fails, so that a ticket waiting for it is answered") {
  TempDir dir;
  // Two trials, divisor 2: ticket 2 waits while a trial runs and nothing is promotable.
  const auto experiment = asha(false, 2);
  Coordinator t0(experiment, dir.journal()), t1(experiment, dir.journal()), t2(experiment, dir.journal());
  REQUIRE(t0.request_work(0).kind == Work::Kind::train);
  REQUIRE(t1.request_work(1).kind == Work::Kind::train);
  CHECK(t1.report_validation(1, 4, 0.9).kind == Decision::Kind::pause);
  t1.report_exit(1, searcher::ExitKind::paused, "paused at rung 0");
  REQUIRE(t2.request_work(2).kind == Work::Kind::wait);  // trial 0 still runs
  const auto seen = t2.state().trials().at(0);
  REQUIRE(seen.status == "running");

  // Judged on an older view: trial 0 has reported since, so it is not lost.
  auto stale = seen;
  stale.last_length = -1;
  CHECK_FALSE(t2.report_lost(stale, "lost: test"));
  CHECK(t2.state().trials().at(0).status == "running");

  CHECK(t2.report_lost(seen, "lost: its array task 9_0 ended (CANCELLED)"));
  CHECK(t2.state().trials().at(0).status == "failed");
  CHECK(t2.state().trials().at(0).failure == "lost: its array task 9_0 ended (CANCELLED)");
  CHECK_FALSE(t0.report_lost(seen, "lost: again"));  // another ticket found it too: one event
  CHECK(t2.state().to_json() == replayed(experiment, dir));
  // The search goes on without it: ticket 2 is no longer told to wait for it.
  CHECK(t2.request_work(2).kind != Work::Kind::wait);
}

TEST_CASE("coordinator: a lost trial's unsettled pause is settled, a settled one left alone") {
  TempDir dir;
  const auto experiment = asha(false, 3);
  Coordinator t0(experiment, dir.journal()), t3(experiment, dir.journal());
  REQUIRE(t0.request_work(0).kind == Work::Kind::train);
  CHECK(t0.report_validation(0, 4, 0.1).kind == Decision::Kind::pause);
  t3.refresh();
  const auto seen = t3.state().trials().at(0);
  REQUIRE(seen.status == "paused");
  REQUIRE_FALSE(seen.settled);
  CHECK(t3.report_lost(seen, "lost: its array task 9_0 ended (NODE_FAIL)"));
  CHECK(t3.state().trials().at(0).status == "paused");
  CHECK(t3.state().trials().at(0).settled);
  CHECK_FALSE(t3.report_lost(t3.state().trials().at(0), "lost: settled already"));
  CHECK(t3.state().to_json() == replayed(experiment, dir));
}

TEST_CASE("coordinator: a journal written by a different searcher is refused with the offset") {
  TempDir dir;
  searcher::Journal journal(dir.journal());
  Work forged;
  forged.kind = Work::Kind::train;
  forged.trial = 0;
  forged.hparams = {{"lr", 99}};
  journal.append(searcher::SearchState::work_event(0, forged, 0));
  Coordinator coordinator(grid(), dir.journal());
  CHECK_THROWS_WITH(coordinator.request_work(1),
                    Catch::Contains("journal record at offset 0") &&
                        Catch::Contains("written by a different searcher"));
}
