// SPDX-License-Identifier: Apache-2.0
// trial.h5's restart history (failures count and /restart_events/<n>): round trip, order past
// nine events, older records without them, and a malformed event name.
#include <hdf5.h>

#include <catch2/catch.hpp>

#include "dlx/record/trial_record.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using namespace dlx::record;
using dlx::checkpoint::testing::sample_record;
using dlx::checkpoint::testing::ScratchDir;

TEST_CASE("trial record keeps failures and restart events in order", "[unit][trial_record]") {
  ScratchDir dir;
  auto path = dir.path() / kTrialFileName;
  auto saved = sample_record();
  saved.failures = 2;
  for (int i = 0; i < 11; ++i) {  // 11 events: "10" and "11" must sort after "9"
    saved.restart_events.push_back({i % 2 ? "crash" : "time_limit", "reason " + std::to_string(i),
                                    1000 + i, 10 * i, i, 0.5 * i, 1.25 * i, "n" + std::to_string(i) + ",n9"});
  }
  saved.stop_cause = "preemption: SIGUSR2 with 3600 s left before the time limit";
  save_trial_record(saved, path);
  auto loaded = load_trial_record(path);
  CHECK(loaded.failures == 2);
  CHECK(loaded.restart_events == saved.restart_events);
  CHECK(loaded.restart_events[3].previous_nodes == "n3,n9");
  CHECK(loaded.stop_cause == saved.stop_cause);
}

TEST_CASE("a record from before format 3 has no stop cause and no previous nodes", "[unit][trial_record]") {
  ScratchDir dir;
  auto path = dir.path() / kTrialFileName;
  auto record = sample_record();
  record.restart_events.push_back({"notice", "requeue: checkpoint at step 3 after SIGUSR2", 1, 2, 3, 4, 5, "n1"});
  record.stop_cause = "requeue: SIGTERM";
  save_trial_record(record, path);
  {
    hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    REQUIRE(file >= 0);
    REQUIRE(H5Adelete_by_name(file, "/", "stop_cause", H5P_DEFAULT) >= 0);
    REQUIRE(H5Adelete_by_name(file, "/restart_events/1", "previous_nodes", H5P_DEFAULT) >= 0);
    H5Fclose(file);
  }
  const auto loaded = load_trial_record(path);
  CHECK(loaded.stop_cause.empty());
  REQUIRE(loaded.restart_events.size() == 1);
  CHECK(loaded.restart_events[0].cause == "notice");
  CHECK(loaded.restart_events[0].previous_nodes.empty());
}

TEST_CASE("a trial record without restart data reads as none", "[unit][trial_record]") {
  ScratchDir dir;
  auto path = dir.path() / kTrialFileName;
  save_trial_record(sample_record(), path);
  auto loaded = load_trial_record(path);
  CHECK(loaded.failures == 0);
  CHECK(loaded.restart_events.empty());
}

TEST_CASE("a restart event with a bad name is refused with the file named",
          "[unit][trial_record]") {
  ScratchDir dir;
  auto path = dir.path() / kTrialFileName;
  auto record = sample_record();
  record.restart_events.push_back({"notice", "", 1, 2, 3, 4, 5, ""});
  save_trial_record(record, path);
  {
    hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    REQUIRE(file >= 0);
    hid_t group = H5Gcreate2(file, "/restart_events/first", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(group >= 0);
    H5Gclose(group);
    H5Fclose(file);
  }
  CHECK_THROWS_WITH(load_trial_record(path),
                    Catch::Contains(path.string()) &&
                        Catch::Contains("/restart_events/first is not a restart number"));
}
