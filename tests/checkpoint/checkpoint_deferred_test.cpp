// SPDX-License-Identifier: Apache-2.0
// Deferred tensors (Deferral, Checkpoint::read_into): a load verifies them like every other tensor
// but keeps their bytes in the file, and read_into reads each straight into the caller's memory.
// What must hold: the same bytes as a full load; a damaged deferred tensor refuses the whole load
// (so discovery falls back, before the caller changed anything); a file changed after the load
// is caught by read_into's own CRC check; a file renamed over the path is not what is read.
#include <algorithm>

#include <catch2/catch.hpp>

#include "checkpoint_samples.hpp"
#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/checkpoint/discovery.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using Catch::Matchers::Contains;
using dlx::checkpoint::testing::ScratchDir;

namespace {

std::vector<std::byte> read_deferred(const Checkpoint& loaded, const std::string& name) {
  const auto* info = loaded.find_deferred(name);
  REQUIRE(info != nullptr);
  std::vector<std::byte> out(info->bytes);
  loaded.read_into(name, out);
  return out;
}

std::vector<std::byte> held_bytes(const Checkpoint& loaded, const std::string& name) {
  const auto& tensor = loaded.tensor(name);
  return {tensor.bytes.data(), tensor.bytes.data() + tensor.bytes.size()};
}

}  // namespace

TEST_CASE("deferred tensors are listed, not held, and read_into gives a full load's bytes",
          "[unit][checkpoint][deferred]") {
  ScratchDir dir;
  testing::SampleContent sample(100, 300000);  // model/big: 1.2 MiB, more than one read piece
  const auto path = checkpoint_path(dir.path(), 100);
  save_checkpoint(sample.content(), path);
  const auto full = load_checkpoint(path);
  const auto loaded = load_checkpoint(path, {}, Deferral{{"model/", "rng/"}});

  std::vector<std::string> deferred;
  for (const auto& info : loaded.deferred) deferred.push_back(info.name);
  CHECK(deferred == std::vector<std::string>{"model/big", "model/brain", "model/fc1/bias",
                                             "model/fc1/weight", "model/half", "rng/rank-0/dropout"});
  CHECK(std::is_sorted(deferred.begin(), deferred.end()));
  CHECK(loaded.find("model/big") == nullptr);
  CHECK(loaded.find("optimizer/momentum") != nullptr);  // not deferred: held as before
  CHECK(loaded.tensors.size() + loaded.deferred.size() == full.tensors.size());
  for (const auto& name : deferred) {
    INFO(name);
    CHECK(read_deferred(loaded, name) == held_bytes(full, name));
    CHECK(loaded.find_deferred(name)->shape == full.tensor(name).shape);
  }
  CHECK(held_bytes(loaded, "optimizer/momentum") == held_bytes(full, "optimizer/momentum"));
  // A name is read as often as asked, and an empty prefix defers nothing.
  CHECK(read_deferred(loaded, "model/fc1/bias") == held_bytes(full, "model/fc1/bias"));
  CHECK(load_checkpoint(path, {}, Deferral{{""}}).deferred.empty());
}

TEST_CASE("read_into refuses another size and a tensor that was not deferred",
          "[unit][checkpoint][deferred]") {
  ScratchDir dir;
  testing::SampleContent sample(100, 1000);
  const auto path = checkpoint_path(dir.path(), 100);
  save_checkpoint(sample.content(), path);
  const auto loaded = load_checkpoint(path, {}, Deferral{{"model/"}});
  std::vector<std::byte> small(10);
  CHECK_THROWS_WITH(loaded.read_into("model/big", small),
                    Contains("tensor 'model/big' of") && Contains("is 4000 bytes; the memory given for it is 10"));
  CHECK_THROWS_WITH(loaded.read_into("optimizer/momentum", small),
                    Contains("holds no deferred tensor 'optimizer/momentum'"));
  CHECK_THROWS_WITH(load_checkpoint(path).read_into("model/big", small),
                    Contains("holds no deferred tensor 'model/big'"));
}

TEST_CASE("a damaged deferred tensor refuses the load, and discovery falls back",
          "[unit][checkpoint][deferred]") {
  ScratchDir dir;
  testing::SampleContent older(100, 1000), newer(200, 1000);
  save_checkpoint(older.content(), checkpoint_path(dir.path(), 100));
  const auto damaged = checkpoint_path(dir.path(), 200);
  save_checkpoint(newer.content(), damaged);
  testing::flip_byte_in_place(damaged, testing::tensor_offset(damaged, "model/big") + 17);

  const Deferral model{{"model/"}};
  CHECK_THROWS_WITH(load_checkpoint(damaged, {}, model), Contains("checksum mismatch in tensor 'model/big'"));
  auto found = load_latest_valid(dir.path(), {}, model);
  REQUIRE(found.checkpoint);
  CHECK(found.checkpoint->metadata.step == 100);
  REQUIRE(found.skipped.size() == 1);
  CHECK_THAT(found.skipped.front().reason, Contains("checksum mismatch in tensor 'model/big'"));
  CHECK_FALSE(found.checkpoint->deferred.empty());
  CHECK(read_deferred(*found.checkpoint, "model/big") ==
        held_bytes(load_checkpoint(checkpoint_path(dir.path(), 100)), "model/big"));
}

TEST_CASE("a file changed after the load is caught as read_into reads it, and one renamed over it is "
          "not read", "[unit][checkpoint][deferred]") {
  ScratchDir dir;
  testing::SampleContent first(100, 3000), second(100, 5000);
  const auto path = checkpoint_path(dir.path(), 100);
  save_checkpoint(first.content(), path);
  const auto expected = held_bytes(load_checkpoint(path), "model/big");

  SECTION("changed in place") {
    const auto loaded = load_checkpoint(path, {}, Deferral{{"model/"}});
    testing::flip_byte_in_place(path, testing::tensor_offset(path, "model/big") + 5);
    std::vector<std::byte> out(expected.size());
    CHECK_THROWS_WITH(loaded.read_into("model/big", out),
                      Contains("checksum mismatch in tensor 'model/big'") && Contains("the file is damaged"));
  }
  SECTION("replaced by a rename (as every save replaces a file)") {
    const auto loaded = load_checkpoint(path, {}, Deferral{{"model/"}});
    const auto other = dir.path() / "other.h5";
    save_checkpoint(second.content(), other);
    std::filesystem::rename(other, path);
    CHECK(read_deferred(loaded, "model/big") == expected);  // the verified file's bytes
  }
}
