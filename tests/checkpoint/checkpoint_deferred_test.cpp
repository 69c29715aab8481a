// SPDX-License-Identifier: Apache-2.0
// Deferred tensors (Deferral, Checkpoint::read_into): a load verifies them like every other tensor
// but keeps their bytes in the file, and read_into reads each straight into the caller's memory.
// What must hold: the same bytes as a full load; a damaged deferred tensor refuses the whole load
// (so discovery falls back, before the caller changed anything); a file changed after the load
// is caught by read_into's own CRC check; a file renamed over the path is not what is read.
// Placed tensors (Deferral::place): read and verified straight in the caller's memory, which the
// load never frees and never reuses; a damaged one refuses the load like any other. Tensors
// placed on the device (Deferral::place_on_device) where no GPU can take them: DeviceLoadError,
// which discovery lets through rather than skipping to an older file.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "checkpoint_samples.hpp"
#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/checkpoint/discovery.hpp"
#include "dlx/checkpoint/error.hpp"
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

namespace {

// Deferral::place for the tests: each tensor under `prefix` gets memory of its own here (new
// memory, as a caller's fresh tensors), recorded by name with the number of calls.
struct Placer {
  std::string prefix;
  std::map<std::string, std::vector<std::byte>> memory = {};
  int calls = 0;

  Deferral deferral(std::vector<std::string> deferred = {}) {
    return Deferral{std::move(deferred), [this](const TensorInfo& info) -> std::byte* {
                      ++calls;
                      if (!info.name.starts_with(prefix)) return nullptr;
                      auto& bytes = memory[info.name];
                      bytes.assign(info.bytes, std::byte{0});
                      return bytes.data();
                    }};
  }
};

}  // namespace

TEST_CASE("placed tensors are read and verified in the caller's memory, which the load never frees",
          "[unit][checkpoint][deferred]") {
  ScratchDir dir;
  testing::SampleContent sample(100, 300000);
  const auto path = checkpoint_path(dir.path(), 100);
  save_checkpoint(sample.content(), path);
  const auto full = load_checkpoint(path);

  Placer placer{"optimizer/"};
  {
    const auto loaded = load_checkpoint(path, {}, placer.deferral({"model/"}));
    REQUIRE(placer.memory.count("optimizer/momentum") == 1);
    const auto& held = loaded.tensor("optimizer/momentum");
    CHECK(held.bytes.borrowed());
    CHECK(held.bytes.data() == placer.memory["optimizer/momentum"].data());  // read there, no copy
    CHECK(held_bytes(loaded, "optimizer/momentum") == held_bytes(full, "optimizer/momentum"));
    CHECK(placer.memory["optimizer/momentum"] == held_bytes(full, "optimizer/momentum"));
    CHECK(loaded.find("model/big") == nullptr);  // deferred still, never placed
    CHECK_FALSE(loaded.find_deferred("model/big") == nullptr);
    // Every tensor that is not deferred was offered; only the prefix's were taken.
    CHECK(placer.calls == static_cast<int>(loaded.tensors.size()));
    for (const auto& tensor : loaded.tensors) {
      INFO(tensor.name);
      CHECK(tensor.bytes.borrowed() == tensor.name.starts_with("optimizer/"));
    }

    // A placed checkpoint handed back for reuse does not give the caller's memory to the next
    // load: that load reads into the library's own.
    auto again = load_checkpoint(path, {}, Checkpoint(load_checkpoint(path, {}, placer.deferral())));
    CHECK_FALSE(again.tensor("optimizer/momentum").bytes.borrowed());
    CHECK(again.tensor("optimizer/momentum").bytes.data() != placer.memory["optimizer/momentum"].data());
  }
  // The Checkpoints are gone and the caller's memory is still its own (a free of it by the
  // library would fail here, or under the sanitizers at the latest).
  CHECK(placer.memory["optimizer/momentum"] == held_bytes(full, "optimizer/momentum"));
}

TEST_CASE("a damaged placed tensor refuses the load, and discovery falls back, placing the older "
          "file's tensors anew", "[unit][checkpoint][deferred]") {
  ScratchDir dir;
  testing::SampleContent older(100, 1000), newer(200, 1000);
  save_checkpoint(older.content(), checkpoint_path(dir.path(), 100));
  const auto damaged = checkpoint_path(dir.path(), 200);
  save_checkpoint(newer.content(), damaged);
  testing::flip_byte_in_place(damaged, testing::tensor_offset(damaged, "optimizer/momentum") + 3);

  Placer placer{"optimizer/"};
  CHECK_THROWS_WITH(load_checkpoint(damaged, {}, placer.deferral()),
                    Contains("checksum mismatch in tensor 'optimizer/momentum'"));
  placer.calls = 0;
  auto found = load_latest_valid(dir.path(), {}, placer.deferral());
  REQUIRE(found.checkpoint);
  CHECK(found.checkpoint->metadata.step == 100);
  REQUIRE(found.skipped.size() == 1);
  CHECK_THAT(found.skipped.front().reason, Contains("checksum mismatch in tensor 'optimizer/momentum'"));
  CHECK(placer.calls > static_cast<int>(found.checkpoint->tensors.size()));  // both files offered
  const auto& momentum = found.checkpoint->tensor("optimizer/momentum");
  CHECK(momentum.bytes.data() == placer.memory["optimizer/momentum"].data());
  CHECK(held_bytes(*found.checkpoint, "optimizer/momentum") ==
        held_bytes(load_checkpoint(checkpoint_path(dir.path(), 100)), "optimizer/momentum"));
}

TEST_CASE("read_into reads a tensor of several CRC blocks on several threads, bytes as a full load",
          "[unit][checkpoint][deferred]") {
  ScratchDir dir;
  testing::SampleContent sample(100, 10'000'003);  // model/big: 40 MiB, three CRC blocks
  const auto path = checkpoint_path(dir.path(), 100);
  save_checkpoint(sample.content(), path);
  const auto full = load_checkpoint(path);
  const auto loaded = load_checkpoint(path, {}, Deferral{{"model/"}});
  CHECK(read_deferred(loaded, "model/big") == held_bytes(full, "model/big"));
}

TEST_CASE("read_into of several tensors at once gives each a full load's bytes, and checks every name "
          "and size before reading any", "[unit][checkpoint][deferred]") {
  ScratchDir dir;
  testing::SampleContent sample(100, 2'000'000);  // model/big: 8 MiB, past the single-thread bound
  const auto path = checkpoint_path(dir.path(), 100);
  save_checkpoint(sample.content(), path);
  const auto full = load_checkpoint(path);
  const auto loaded = load_checkpoint(path, {}, Deferral{{"model/"}});

  std::map<std::string, std::vector<std::byte>> out;
  std::vector<Checkpoint::DeferredRead> reads;
  for (const auto& info : loaded.deferred) {
    out[info.name].assign(info.bytes, std::byte{0x5a});
  }
  for (auto& [name, bytes] : out) reads.push_back({name, bytes});
  REQUIRE(reads.size() == 5);
  loaded.read_into(reads);
  for (const auto& [name, bytes] : out) CHECK(bytes == held_bytes(full, name));
  loaded.read_into(std::span<const Checkpoint::DeferredRead>{});  // nothing to read: nothing done

  // One bad entry, last: refused before anything is read (the first tensor keeps its marker).
  std::vector<std::byte> first(loaded.deferred.front().bytes, std::byte{0x5a});
  std::vector<std::byte> short_of_big(8);
  const std::vector<Checkpoint::DeferredRead> bad_size{{loaded.deferred.front().name, first},
                                                       {"model/big", short_of_big}};
  CHECK_THROWS_WITH(loaded.read_into(bad_size), Contains("tensor 'model/big' of") && Contains("the memory given for it is 8"));
  const std::vector<Checkpoint::DeferredRead> not_deferred{{loaded.deferred.front().name, first},
                                                           {"optimizer/momentum", short_of_big}};
  CHECK_THROWS_WITH(loaded.read_into(not_deferred), Contains("holds no deferred tensor 'optimizer/momentum'"));
  CHECK(std::all_of(first.begin(), first.end(), [](std::byte b) { return b == std::byte{0x5a}; }));

  // A file changed after the load: the batch's own CRC check names the tensor.
  testing::flip_byte_in_place(path, testing::tensor_offset(path, "model/fc1/weight") + 1);
  for (auto& [name, bytes] : out) std::fill(bytes.begin(), bytes.end(), std::byte{0});
  CHECK_THROWS_WITH(loaded.read_into(reads), Contains("checksum mismatch in tensor 'model/fc1/weight'"));
}

// The loads into device memory themselves are the GPU check's to show
// (tests/gpu/checkpoint_device_check.cpp); here, a device that cannot take the tensor (no GPU
// here, or a dlx without CUDA; on a GPU, an address that is not device memory) refuses the load.
TEST_CASE("a load into device memory that the device refuses fails, and discovery does not fall "
          "back to an older file", "[unit][checkpoint][deferred]") {
  ScratchDir dir;
  testing::SampleContent older(100, 1000);
  testing::SampleContent newer(200, 1000);
  save_checkpoint(older.content(), checkpoint_path(dir.path(), 100));
  save_checkpoint(newer.content(), checkpoint_path(dir.path(), 200));
  std::vector<std::string> asked;
  Deferral defer;
  defer.place_on_device = [&](const TensorInfo& info) -> void* {
    asked.push_back(info.name);
    return info.name == "model/big" ? reinterpret_cast<void*>(std::uintptr_t{0x1000}) : nullptr;
  };
  CHECK_THROWS_AS(load_checkpoint(checkpoint_path(dir.path(), 200), {}, defer), DeviceLoadError);
  CHECK_THROWS_WITH(load_checkpoint(checkpoint_path(dir.path(), 200), {}, defer),
                    Contains("load into device memory: "));
  CHECK(std::count(asked.begin(), asked.end(), "model/big") == 2);
  asked.clear();
  CHECK_THROWS_AS(load_latest_valid(dir.path(), {}, defer), DeviceLoadError);
  CHECK(std::count(asked.begin(), asked.end(), "model/big") == 1);  // step 200 only: no fallback
}
