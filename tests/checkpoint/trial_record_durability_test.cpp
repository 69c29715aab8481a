// SPDX-License-Identifier: Apache-2.0
// Saves go through temp + rename: no leftovers, and a failed save never damages the last record.
#include <catch2/catch.hpp>

#include "dlx/record/trial_record.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using namespace dlx::record;
using Catch::Matchers::Contains;
using dlx::checkpoint::testing::file_names_in;
using dlx::checkpoint::testing::ScratchDir;

TEST_CASE("saving over an existing record leaves no temporary files", "[unit][trial_record]") {
  ScratchDir dir;
  auto path = dir.path() / kTrialFileName;
  auto record = testing::sample_record();
  for (int i = 0; i < 3; ++i) {
    record.updated_unix += 60;
    save_trial_record(record, path);
  }
  CHECK(file_names_in(dir.path()) == std::vector<std::string>{kTrialFileName});
  CHECK(load_trial_record(path).updated_unix == record.updated_unix);
}

TEST_CASE("saving into a nonexistent directory fails naming the file and the cause",
          "[unit][trial_record]") {
  ScratchDir dir;
  auto path = dir.path() / "not-created" / kTrialFileName;
  try {
    save_trial_record(testing::sample_record(), path);
    FAIL("save_trial_record did not throw");
  } catch (const RecordError& e) {
    CHECK_THAT(e.what(), Contains("cannot save trial record " + path.string()));
    CHECK_THAT(e.what(), Contains("No such file or directory"));
  }
  CHECK(file_names_in(dir.path()).empty());
}

TEST_CASE("a save that fails halfway leaves the previous record intact and no temporary file",
          "[unit][trial_record]") {
  ScratchDir dir;
  auto path = dir.path() / kTrialFileName;
  auto record = testing::sample_record();
  save_trial_record(record, path);
  auto before = testing::read_bytes(path);

  auto broken = record;
  broken.state = "failed";
  broken.validation.append(400, {{"", 1.0}});  // refused while writing the metric tables
  CHECK_THROWS_AS(save_trial_record(broken, path), RecordError);

  CHECK(file_names_in(dir.path()) == std::vector<std::string>{kTrialFileName});
  CHECK(testing::read_bytes(path) == before);
  CHECK(load_trial_record(path).state == "completed");
}
