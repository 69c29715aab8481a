// trial.h5's restart history (failures count and /restart_events/<n>): round trip, order past
// nine events, older records without them, and a malformed event name.
#include <hdf5.h>

#include <catch2/catch.hpp>

#include "dlx/checkpoint/trial_record.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using dlx::checkpoint::testing::sample_record;
using dlx::checkpoint::testing::ScratchDir;

TEST_CASE("trial record keeps failures and restart events in order", "[unit][trial_record]") {
  ScratchDir dir;
  auto path = dir.path() / kTrialFileName;
  auto saved = sample_record();
  saved.failures = 2;
  for (int i = 0; i < 11; ++i) {  // 11 events: "10" and "11" must sort after "9"
    saved.restart_events.push_back({i % 2 ? "crash" : "notice", "reason " + std::to_string(i),
                                    1000 + i, 10 * i, i, 0.5 * i, 1.25 * i});
  }
  save_trial_record(saved, path);
  auto loaded = load_trial_record(path);
  CHECK(loaded.failures == 2);
  CHECK(loaded.restart_events == saved.restart_events);
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
  record.restart_events.push_back({"notice", "", 1, 2, 3, 4, 5});
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
