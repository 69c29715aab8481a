// SPDX-License-Identifier: Apache-2.0
// referenced_checkpoints(SearchState): the checkpoints retention must keep because searcher
// decisions still need them, with the reason `dlx ckpt ls` prints: a paused ASHA trial's
// checkpoint at its pause length, a planned PBT trial's start checkpoint, and the latest PBT
// round's results while another round is to come. Driven through a real journal.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>

#include "dlx/config/parse.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/searcher/references.hpp"
#include "dlx/searcher/search_state.hpp"
#include "searcher_temp_dir.hpp"

using namespace dlx;
using searcher::Coordinator;
using searcher::Decision;
using searcher::Work;

namespace {

using dlx::testing::TempDir;

config::Experiment parse(const std::string& searcher) {
  return config::parse_experiment(
      "name: t\nentrypoint: x\nseed: 3\nsearcher: " + searcher +
          "\nhyperparameters:\n  x: {type: double, minval: 0, maxval: 1}\n",
      "t.yaml");
}

}  // namespace

TEST_CASE("references: a paused ASHA trial's checkpoint at its pause length is referenced") {
  TempDir dir;
  const auto experiment = parse("{name: async_halving, metric: loss, max_trials: 4, divisor: 2, "
                                "max_rungs: 2, max_length: {batches: 8}}");
  Coordinator coordinator(experiment, dir.journal());
  CHECK(searcher::referenced_checkpoints(coordinator.state()).empty());
  // Each new trial reports worse than the ones before at rung 0 (length 4): not promotable.
  int paused = -1;
  for (int ticket = 0; ticket < 4 && paused < 0; ++ticket) {
    const Work work = coordinator.request_work(ticket);
    REQUIRE(work.kind == Work::Kind::train);
    const Decision decision = coordinator.report_validation(work.trial, work.target_length, 0.1 * (ticket + 1));
    if (decision.kind == Decision::Kind::pause) paused = work.trial;
  }
  REQUIRE(paused >= 0);
  const auto references = searcher::referenced_checkpoints(coordinator.state());
  REQUIRE(references.size() == 1);
  CHECK(references[0] == searcher::CheckpointReference{paused, 4, ""});
  CHECK(references[0].why == fmt::format("trial {} paused at length 4; a promotion resumes it from here", paused));
  CHECK(searcher::referenced_steps_of(references, paused) ==
        std::map<std::int64_t, std::string>{{4, references[0].why}});
  CHECK(searcher::referenced_steps_of(references, paused + 1).empty());
}

TEST_CASE("references: PBT names the next round's start checkpoints and, before it is planned, every parent") {
  TempDir dir;
  const auto experiment = parse("{name: pbt, metric: loss, population_size: 2, num_rounds: 3, "
                                "length_per_round: {batches: 100}, "
                                "replace_function: {truncate_fraction: 0.5}}");
  Coordinator coordinator(experiment, dir.journal());
  for (int ticket : {0, 1}) REQUIRE(coordinator.request_work(ticket).kind == Work::Kind::train);
  coordinator.report_validation(0, 100, 0.2);
  // Trial 0 has reported, trial 1 not yet: trial 0 may become a parent of round 1.
  auto references = searcher::referenced_checkpoints(coordinator.state());
  REQUIRE(references.size() == 1);
  CHECK(references[0] == searcher::CheckpointReference{0, 100, ""});
  CHECK(references[0].why == "PBT: a possible parent of round 1 (planned when round 0 has finished)");
  // The last report of round 0 plans round 1; both trials paused there, and their tasks settle it.
  coordinator.report_validation(1, 100, 0.7);
  coordinator.report_exit(0, searcher::ExitKind::paused, "paused");
  coordinator.report_exit(1, searcher::ExitKind::paused, "paused");
  const Work next = coordinator.request_work(2);
  REQUIRE(next.kind == Work::Kind::train);
  CHECK(next.trial == 0);               // member 0 was better: trial 0 goes on ...
  REQUIRE(next.checkpoint_trial == 0);  // ... from its own checkpoint
  references = searcher::referenced_checkpoints(coordinator.state());
  // Trial 0 (member 0 goes on) and new trial 2 (member 1's replacement, a copy of trial 0) both
  // start from trial 0's checkpoint; trial 1's is no longer needed.
  REQUIRE(references.size() == 1);
  CHECK(references[0] == searcher::CheckpointReference{0, 100, ""});
  CHECK(references[0].why == "PBT round 1: trial 0 starts from it");
  // A later process replaying the journal read-only sees the same references.
  const auto replayed = searcher::replay_journal(experiment, searcher::Journal(dir.journal()).read());
  CHECK(searcher::referenced_checkpoints(replayed).front().why == references[0].why);
}
