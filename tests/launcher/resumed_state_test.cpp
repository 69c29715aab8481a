// SPDX-License-Identifier: Apache-2.0
// ResumedState::restore over a resume that deferred tensors (Trial::resume's `defer`): the bytes
// are read from the file straight into the caller's buffer, with the same checks of element type
// and count as a held tensor, and tensor() says a deferred tensor is read with restore().
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "dlx/checkpointing.hpp"
#include "process_helpers.hpp"

using Catch::Matchers::Contains;
using dlx::checkpoint::DType;

TEST_CASE("resumed state: a deferred tensor is restored straight into the caller's buffer",
          "[sdk][checkpoint]") {
  dlx::test::TempDir dir("resumed-deferred");
  std::vector<float> weights(70000);
  for (std::size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>(i) * 0.5f - 7.0f;
  const std::vector<std::int64_t> counts{3, 1, 4, 1, 5};
  dlx::checkpoint::CheckpointContent content;
  content.metadata.step = 12;
  content.tensors.push_back({"model/w", DType::float32, {weights.size()}, weights.data()});
  content.tensors.push_back({"optimizer/counts", DType::int64, {counts.size()}, counts.data()});
  const auto path = dlx::checkpoint::checkpoint_path(dir.path(), 12);
  dlx::checkpoint::save_checkpoint(content, path);

  const dlx::ResumedState resumed(dlx::checkpoint::load_checkpoint(path, {}, dlx::checkpoint::Deferral{{"model/"}}), path, 0);
  REQUIRE(resumed.checkpoint().find_deferred("model/w") != nullptr);
  std::vector<float> into(weights.size(), -1.0f);
  resumed.restore("model/w", std::span<float>(into));
  CHECK(into == weights);
  std::vector<std::int64_t> held(counts.size());
  resumed.restore("optimizer/counts", std::span<std::int64_t>(held));  // not deferred: copied
  CHECK(held == counts);

  CHECK_THROWS_WITH(resumed.tensor("model/w"),
                    Contains("tensor 'model/w' was deferred by the resume") && Contains("read it with restore()"));
  std::vector<std::int32_t> wrong_type(weights.size());
  CHECK_THROWS_WITH(resumed.restore("model/w", std::span<std::int32_t>(wrong_type)),
                    Contains("tensor 'model/w' is float32, which does not match the 4-byte integer buffer"));
  std::vector<float> wrong_count(10);
  CHECK_THROWS_WITH(resumed.restore("model/w", std::span<float>(wrong_count)),
                    Contains("tensor 'model/w' has 70000 elements but the buffer to restore it into has 10"));
  CHECK_THROWS_WITH(resumed.restore("model/absent", std::span<float>(wrong_count)),
                    Contains("has no tensor 'model/absent'"));
}
