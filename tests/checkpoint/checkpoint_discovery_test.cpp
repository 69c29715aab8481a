// SPDX-License-Identifier: Apache-2.0
// Latest-valid discovery: newer damaged, foreign or temporary files are skipped with a reason and
// the trial falls back to the previous good checkpoint; the store's validator hook agrees.
#include <catch2/catch.hpp>

#include "checkpoint_samples.hpp"
#include "dlx/checkpoint/discovery.hpp"
#include "dlx/store/experiment_layout.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using Catch::Matchers::Contains;
using dlx::checkpoint::testing::ScratchDir;

TEST_CASE("the newest checkpoint that verifies is found, newer bad files are reported",
          "[unit][checkpoint][discovery]") {
  ScratchDir dir;
  const Expectation trial7{.experiment = "mnist-asha", .trial_id = 7};
  for (std::int64_t step : {100, 200, 300}) {
    testing::SampleContent sample(step, 2000);
    save_checkpoint(sample.content(), checkpoint_path(dir.path(), step));
  }
  SECTION("all good: the newest") {
    auto latest = find_latest_valid(dir.path(), trial7);
    REQUIRE(latest.path);
    CHECK(latest.path->filename() == "step-300.h5");
    CHECK(latest.skipped.empty());
  }
  SECTION("damaged, foreign, misnamed and temporary files are skipped") {
    auto bytes = testing::read_bytes(checkpoint_path(dir.path(), 300));
    testing::write_bytes(checkpoint_path(dir.path(), 300), bytes.substr(0, bytes.size() / 2));
    auto other = testing::SampleContent(400);
    other.content().metadata.trial_id = 8;
    save_checkpoint(other.content(), checkpoint_path(dir.path(), 400));
    testing::SampleContent misnamed(100);
    save_checkpoint(misnamed.content(), checkpoint_path(dir.path(), 500));
    testing::write_bytes(dir.path() / ".tmp.step-600.h5.123.0.abcd", "partial");

    auto latest = find_latest_valid(dir.path(), trial7);
    REQUIRE(latest.path);
    CHECK(latest.path->filename() == "step-200.h5");
    CHECK(latest.summary->metadata.step == 200);
    REQUIRE(latest.skipped.size() == 4);
    CHECK_THAT(latest.skipped[0].reason, Contains("temporary file"));
    CHECK_THAT(latest.skipped[1].reason, Contains("not the step in its name"));
    CHECK_THAT(latest.skipped[2].reason, Contains("belongs to trial 8"));
    CHECK(latest.skipped[3].path.filename() == "step-300.h5");

    auto loaded = load_latest_valid(dir.path(), trial7);  // one pass, same choice and reports
    REQUIRE(loaded.checkpoint);
    CHECK(loaded.path->filename() == "step-200.h5");
    CHECK(loaded.checkpoint->metadata.step == 200);
    CHECK(loaded.skipped.size() == 4);
    CHECK_THAT(loaded.skipped[3].reason, Contains("step-300.h5"));

    auto valid = [&](const std::filesystem::path& p) { return is_valid_checkpoint(p, trial7); };
    CHECK(dlx::store::latest_checkpoint(dir.path(), valid)->filename() == "step-200.h5");
    CHECK(dlx::store::latest_checkpoint(dir.path())->filename() == "step-500.h5");  // name scan
  }
  SECTION("a bit flip in the newest tensor data falls back under full verification only") {
    auto path = checkpoint_path(dir.path(), 300);
    auto bytes = testing::read_bytes(path);
    auto at = testing::tensor_offset(path, "model/big") + 100;
    bytes[at] = static_cast<char>(bytes[at] ^ 0x40);
    testing::write_bytes(path, bytes);
    CHECK(find_latest_valid(dir.path(), trial7).path->filename() == "step-200.h5");
    CHECK(load_latest_valid(dir.path(), trial7).path->filename() == "step-200.h5");
    CHECK(find_latest_valid(dir.path(), trial7, Verification::metadata).path->filename() ==
          "step-300.h5");
  }
}

TEST_CASE("an empty or missing directory means a fresh start", "[unit][checkpoint][discovery]") {
  ScratchDir dir;
  CHECK_FALSE(find_latest_valid(dir.path()).path);
  CHECK_FALSE(find_latest_valid(dir.path() / "missing").path);
  CHECK_FALSE(load_latest_valid(dir.path() / "missing").checkpoint);
}
