// SPDX-License-Identifier: Apache-2.0
// Every way a trial.h5 can be unreadable gives a RecordError naming the file and the problem.
#include <hdf5.h>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "dlx/h5/handle.hpp"
#include "dlx/record/trial_record.hpp"
#include "h5_edit.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using namespace dlx::record;
using Catch::Matchers::Contains;
using dlx::h5::Handle;
using dlx::checkpoint::testing::ScratchDir;
using dlx::checkpoint::testing::remove_attribute;
using dlx::checkpoint::testing::remove_link;
using dlx::checkpoint::testing::set_format_version;

namespace {

std::string load_error(const std::filesystem::path& path) {
  try {
    load_trial_record(path);
  } catch (const RecordError& e) {
    return e.what();
  }
  FAIL("load_trial_record(" << path << ") did not throw RecordError");
  return {};
}

}  // namespace

TEST_CASE("loading a nonexistent trial record names the file and errno", "[unit][trial_record]") {
  ScratchDir dir;
  auto path = dir.path() / "missing" / kTrialFileName;
  auto message = load_error(path);
  CHECK_THAT(message, Contains(path.string()));
  CHECK_THAT(message, Contains("No such file or directory"));
}

TEST_CASE("loading a file that is not HDF5 says so", "[unit][trial_record]") {
  ScratchDir dir;
  auto path = dir.path() / kTrialFileName;
  testing::write_bytes(path, "step,loss\n1,0.5\n");
  auto message = load_error(path);
  CHECK_THAT(message, Contains(path.string()));
  CHECK_THAT(message, Contains("not an HDF5 file"));
  CHECK_THROWS_AS(load_trial_record_if_exists(path), RecordError);
}

TEST_CASE("loading a truncated trial record fails with the file named", "[unit][trial_record]") {
  ScratchDir dir;
  auto good = dir.path() / "good.h5";
  save_trial_record(testing::sample_record(), good);
  auto bytes = testing::read_bytes(good);
  REQUIRE(bytes.size() > 1000);
  auto keep = GENERATE_COPY(std::size_t{0}, std::size_t{4}, std::size_t{40}, std::size_t{200},
                            bytes.size() / 2, bytes.size() - 1);
  CAPTURE(keep, bytes.size());
  auto path = dir.path() / kTrialFileName;
  testing::write_bytes(path, bytes.substr(0, keep));
  auto message = load_error(path);
  CAPTURE(message);
  CHECK_THAT(message, Contains(path.string()));
  if (keep < 8) {
    CHECK_THAT(message, Contains("not an HDF5 file"));
  } else {
    CHECK_THAT(message, Contains("cannot open HDF5 file"));
  }
}

TEST_CASE("loading an HDF5 file that is not a trial record names what is missing",
          "[unit][trial_record]") {
  ScratchDir dir;
  auto path = dir.path() / kTrialFileName;
  SECTION("empty HDF5 file") {
    Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    REQUIRE(file.get() >= 0);
    file.reset();
    auto message = load_error(path);
    CHECK_THAT(message, Contains(path.string()));
    CHECK_THAT(message, Contains("missing attribute 'format_version' of /"));
  }
  SECTION("record without its validation table") {
    save_trial_record(testing::sample_record(), path);
    remove_link(path, "/metrics/validation");
    auto message = load_error(path);
    CHECK_THAT(message, Contains(path.string()));
    CHECK_THAT(message, Contains("missing group /metrics/validation"));
  }
  SECTION("record without a metric's steps") {
    save_trial_record(testing::sample_record(), path);
    remove_link(path, "/metrics/training/steps");
    CHECK_THAT(load_error(path), Contains("missing dataset /metrics/training/steps"));
  }
  SECTION("record without its state attribute") {
    save_trial_record(testing::sample_record(), path);
    remove_attribute(path, "state");
    CHECK_THAT(load_error(path), Contains("missing attribute 'state' of /"));
  }
}

TEST_CASE("loading a record from a newer dlx names both format versions", "[unit][trial_record]") {
  ScratchDir dir;
  auto path = dir.path() / kTrialFileName;
  save_trial_record(testing::sample_record(), path);
  set_format_version(path, TrialRecord::kFormatVersion + 1);
  auto message = load_error(path);
  CHECK_THAT(message, Contains(path.string()));
  CHECK_THAT(message, Contains(fmt::format("format_version {} is newer than the newest this dlx reads ({})",
                                           TrialRecord::kFormatVersion + 1, TrialRecord::kFormatVersion)));
}

TEST_CASE("records that cannot be stored are refused by name", "[unit][trial_record]") {
  ScratchDir dir;
  auto path = dir.path() / kTrialFileName;
  auto record = testing::sample_record();
  SECTION("metric name with the division slash trial.h5 keeps for '/'") {
    record.training.append(400, {{"val\u2215loss", 0.5}});
    CHECK_THROWS_WITH(save_trial_record(record, path), Contains("metric name 'val\u2215loss' contains U+2215"));
  }
  CHECK(testing::file_names_in(dir.path()).empty());
}

TEST_CASE("a failed load leaves HDF5's automatic error printing as it was",
          "[unit][trial_record]") {
  ScratchDir dir;
  H5E_auto2_t before = nullptr;
  void* before_data = nullptr;
  REQUIRE(H5Eget_auto2(H5E_DEFAULT, &before, &before_data) >= 0);
  REQUIRE(before != nullptr);
  auto path = dir.path() / kTrialFileName;
  testing::write_bytes(path, std::string(4096, 'x').replace(0, 8, "\x89HDF\r\n\x1a\n", 8));
  CHECK_THROWS_AS(load_trial_record(path), RecordError);
  H5E_auto2_t after = nullptr;
  void* after_data = nullptr;
  REQUIRE(H5Eget_auto2(H5E_DEFAULT, &after, &after_data) >= 0);
  CHECK(after == before);
  CHECK(after_data == before_data);
}
