// SPDX-License-Identifier: Apache-2.0
// Round trips: every dtype and rank, metadata, state, hyperparameters; the file name helper.
#include <algorithm>

#include <catch2/catch.hpp>

#include "checkpoint_samples.hpp"
#include "dlx/checkpoint/checkpoint.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using dlx::checkpoint::testing::SampleContent;
using dlx::checkpoint::testing::ScratchDir;

TEST_CASE("a checkpoint of every dtype and shape loads back bit for bit", "[unit][checkpoint]") {
  ScratchDir dir;
  SampleContent sample(100, GENERATE(std::size_t{0}, std::size_t{1000}, std::size_t{5} << 20));
  auto path = checkpoint_path(dir.path(), 100);
  save_checkpoint(sample.content(), path);
  auto loaded = load_checkpoint(path);
  CHECK(testing::same_as(sample.content(), loaded));
  CHECK(loaded.metadata.format_version == kCheckpointFormatVersion);
  CHECK(loaded.metadata.library_version == "0.1.0");
  CHECK(loaded.tensor("optimizer/step_count").shape.empty());
  CHECK(loaded.tensor("model/brain").dtype == DType::bfloat16);
  CHECK(loaded.tensor("misc/empty").bytes.size() == 0);
}

TEST_CASE("the summary lists tensors in name order with sizes and checksums", "[unit][checkpoint]") {
  ScratchDir dir;
  SampleContent sample(5, std::size_t{9} << 20);  // 36 MiB: three checksum blocks
  auto path = checkpoint_path(dir.path(), 5);
  save_checkpoint(sample.content(), path);
  auto summary = read_checkpoint_summary(path);
  REQUIRE(summary.tensors.size() == sample.content().tensors.size());
  CHECK(summary.tensors.front().name == "misc/empty");
  const auto& big = summary.tensors[std::size_t(
      std::find_if(summary.tensors.begin(), summary.tensors.end(),
                   [](const TensorInfo& t) { return t.name == "model/big"; }) -
      summary.tensors.begin())];
  CHECK(big.bytes == (std::uint64_t{36} << 20));
  CHECK(big.crc32c.size() == 3);
  CHECK(summary.metadata.metric_value == 0.25);
  CHECK(std::get<std::string>(summary.state.at("note")) == "warm restart");
}

TEST_CASE("metadata defaults: no metric, creation time filled in", "[unit][checkpoint]") {
  ScratchDir dir;
  CheckpointContent content;
  content.metadata.experiment = "e";
  content.metadata.step = 3;
  auto path = checkpoint_path(dir.path(), 3);
  CHECK(path.filename() == "step-3.h5");
  save_checkpoint(content, path);
  auto loaded = load_checkpoint(path);
  CHECK_FALSE(loaded.metadata.metric_value.has_value());
  CHECK(loaded.metadata.created_unix > 1700000000);
  CHECK(loaded.tensors.empty());
}

TEST_CASE("invalid content is refused before anything is written", "[unit][checkpoint]") {
  ScratchDir dir;
  SampleContent sample;
  auto path = checkpoint_path(dir.path(), 100);
  SECTION("duplicate names") {
    sample.content().tensors.push_back(sample.content().tensors.front());
    CHECK_THROWS_WITH(save_checkpoint(sample.content(), path), Catch::Contains("two tensors"));
  }
  SECTION("bad names") {
    sample.content().tensors.front().name = GENERATE("", "/abs", "a//b", "a/../b", "end/");
    CHECK_THROWS_WITH(save_checkpoint(sample.content(), path), Catch::Contains("not valid"));
  }
  // Found by the checkpoint fuzzer: a NUL ends an HDF5 name or fixed-length string early, so the
  // file was read back different from what was saved and failed its metadata checksum forever.
  SECTION("a NUL byte in a tensor name, a state name or value, the experiment or metric name") {
    using namespace std::string_literals;
    const auto nul = "a\0b"s;
    SECTION("tensor") {
      sample.content().tensors.front().name = nul;
      CHECK_THROWS_WITH(save_checkpoint(sample.content(), path),
                        Catch::Contains("tensor name 'a\\0b' is not valid") &&
                            Catch::Contains("no NUL byte"));
    }
    SECTION("state value") {
      sample.content().state["note"] = nul;
      CHECK_THROWS_WITH(save_checkpoint(sample.content(), path),
                        Catch::Contains("state value 'note' contains a NUL byte"));
    }
    SECTION("state name") {
      sample.content().state[nul] = std::int64_t{1};
      CHECK_THROWS_WITH(save_checkpoint(sample.content(), path),
                        Catch::Contains("the name of state value 'a\\0b' contains a NUL byte"));
    }
    SECTION("experiment") {
      sample.content().metadata.experiment = nul;
      CHECK_THROWS_WITH(save_checkpoint(sample.content(), path),
                        Catch::Contains("the experiment name contains a NUL byte"));
    }
    SECTION("metric") {
      sample.content().metadata.metric_name = nul;
      CHECK_THROWS_WITH(save_checkpoint(sample.content(), path),
                        Catch::Contains("the metric name contains a NUL byte"));
    }
  }
  SECTION("missing data") {
    sample.content().tensors.front().data = nullptr;
    CHECK_THROWS_WITH(save_checkpoint(sample.content(), path), Catch::Contains("no data"));
  }
  CHECK(testing::file_names_in(dir.path()).empty());
}
