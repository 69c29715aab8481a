// SPDX-License-Identifier: Apache-2.0
// load_checkpoint into the buffers of an earlier load: the same bytes as a fresh load, the
// buffers of same-named, same-sized tensors reused (no new memory), others allocated; and a load
// that fails leaves nothing half-filled behind in the returned value. Also a multi-block tensor
// read piece by piece (1 MiB preads checksummed on the fly) with a damaged byte in its last block.

#include <catch2/catch.hpp>

#include "checkpoint_samples.hpp"
#include "dlx/checkpoint/checkpoint.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using dlx::checkpoint::testing::ScratchDir;

TEST_CASE("a load into reused buffers equals a fresh load and reuses matching buffers",
          "[unit][checkpoint][load]") {
  ScratchDir dir;
  testing::SampleContent first(100, 5000), second(200, 5000), bigger(300, 9000);
  save_checkpoint(first.content(), checkpoint_path(dir.path(), 100));
  save_checkpoint(second.content(), checkpoint_path(dir.path(), 200));
  save_checkpoint(bigger.content(), checkpoint_path(dir.path(), 300));

  auto loaded = load_checkpoint(checkpoint_path(dir.path(), 100));
  REQUIRE(testing::same_as(first.content(), loaded));
  const auto* big_before = loaded.tensor("model/big").bytes.data();

  auto again = load_checkpoint(checkpoint_path(dir.path(), 200), {}, std::move(loaded));
  CHECK(loaded.tensors.empty());
  CHECK(testing::same_as(second.content(), again));
  CHECK(again.tensor("model/big").bytes.data() == big_before);  // same name, same size: reused

  // model/big grows: a new buffer, and still the right bytes.
  auto grown = load_checkpoint(checkpoint_path(dir.path(), 300), {}, std::move(again));
  CHECK(testing::same_as(bigger.content(), grown));
  CHECK(grown.tensor("model/big").bytes.size() == 9000 * sizeof(float));
}

TEST_CASE("a tensor of several checksum blocks is verified piece by piece",
          "[unit][checkpoint][load]") {
  ScratchDir dir;
  // 2.5 blocks of 16 MiB: pieces of 1 MiB extend each block's CRC; the last block is partial.
  std::vector<float> values(kCrcBlockBytes * 5 / 2 / sizeof(float) + 3);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 977) * 0.5f;
  CheckpointContent content;
  content.metadata.step = 1;
  content.tensors.push_back({"model/huge", DType::float32, {values.size()}, values.data()});
  auto path = checkpoint_path(dir.path(), 1);
  save_checkpoint(content, path);
  auto loaded = load_checkpoint(path);
  REQUIRE(loaded.tensor("model/huge").bytes.size() == values.size() * sizeof(float));
  CHECK(std::equal(values.begin(), values.end(), loaded.tensor("model/huge").as<float>().begin()));
  CHECK(verify_checkpoint(path).tensors.front().crc32c.size() == 3);

  // One flipped bit near the end: block 3 of 3 fails, named in the message.
  testing::flip_byte_in_place(path, testing::tensor_offset(path, "model/huge") + values.size() * sizeof(float) - 5);
  CHECK_THROWS_WITH(load_checkpoint(path),
                    Catch::Contains("checksum mismatch in tensor 'model/huge' (block 2 of 3"));
  CHECK_THROWS_WITH(verify_checkpoint(path),
                    Catch::Contains("checksum mismatch in tensor 'model/huge' (block 2 of 3"));
}
