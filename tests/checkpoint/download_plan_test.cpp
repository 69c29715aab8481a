// SPDX-License-Identifier: Apache-2.0
// DeviceDownload's plan (checkpoint/src/download_plan.hpp): the device-to-host copies of a
// snapshot cut into loads of at most one pinned piece. Carried out here with memcpy through one
// piece, as the CUDA code does with cudaMemcpyAsync, every byte lands where it belongs whatever
// the sizes (empty tensors, tensors smaller than a piece packed together, tensors of many pieces).
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "download_plan.hpp"

namespace {

using dlx::checkpoint::detail::DeviceCopy;
using dlx::checkpoint::detail::plan_download;

struct Tensors {
  std::vector<std::vector<std::byte>> device, host;
  std::vector<DeviceCopy> copies;
  explicit Tensors(const std::vector<std::size_t>& sizes, std::uint32_t seed) {
    std::mt19937 random(seed);
    for (auto size : sizes) {
      std::vector<std::byte> bytes(size);
      for (auto& b : bytes) b = static_cast<std::byte>(random());
      device.push_back(std::move(bytes));
      host.emplace_back(size, std::byte{0});
    }
    for (std::size_t i = 0; i < sizes.size(); ++i)
      copies.push_back({host[i].data(), device[i].data(), sizes[i]});
  }
};

}  // namespace

TEST_CASE("the download plan packs small tensors and cuts large ones at piece boundaries",
          "[unit][checkpoint][snapshot]") {
  Tensors tensors({0, 5, 40, 3, 16, 1}, 1);
  const auto plan = plan_download(tensors.copies, 16);
  // 65 bytes through pieces of 16: five loads, every one but the last full.
  REQUIRE(plan.loads() == 5);
  std::size_t total = 0;
  for (std::size_t load = 0; load < plan.loads(); ++load) {
    std::size_t offset = 0;
    REQUIRE_FALSE(plan.load(load).empty());
    for (const auto& part : plan.load(load)) {
      CHECK(part.offset == offset);  // packed from the piece's start, no gap
      CHECK(part.bytes > 0);
      offset += part.bytes;
    }
    CHECK(offset <= 16);
    if (load + 1 < plan.loads()) CHECK(offset == 16);
    total += offset;
  }
  CHECK(total == 65);
  // The 40-byte tensor spans three loads: 11 bytes after the 5-byte one, then 16, then 13.
  CHECK(plan.load(0).size() == 2);
  CHECK(plan.load(0)[1].bytes == 11);
  CHECK(plan.load(1).size() == 1);
  CHECK(plan.load(2)[0].bytes == 13);
  CHECK(plan_download({}, 16).loads() == 0);
  Tensors empty({0, 0}, 2);
  CHECK(plan_download(empty.copies, 16).loads() == 0);
}

TEST_CASE("carried out through one piece, the plan puts every byte where it belongs",
          "[unit][checkpoint][snapshot]") {
  const auto seed = GENERATE(range(1u, 25u));
  std::mt19937 random(seed);
  std::vector<std::size_t> sizes(std::uniform_int_distribution<std::size_t>(1, 12)(random));
  for (auto& size : sizes) {
    // Mostly small (packed), some of several pieces, some empty.
    const auto kind = random() % 4;
    size = kind == 0 ? 0 : kind == 3 ? random() % 5000 : random() % 300;
  }
  const std::size_t piece_bytes = GENERATE(64, 1000, 4096);
  Tensors tensors(sizes, seed);
  const auto plan = plan_download(tensors.copies, piece_bytes);
  std::vector<std::byte> piece(piece_bytes);
  for (std::size_t load = 0; load < plan.loads(); ++load) {
    for (const auto& part : plan.load(load)) {  // the device-to-host copies into the piece
      REQUIRE(part.offset + part.bytes <= piece_bytes);
      std::copy_n(part.device, part.bytes, piece.data() + part.offset);
    }
    for (const auto& part : plan.load(load))  // then on to the snapshot's buffers
      std::copy_n(piece.data() + part.offset, part.bytes, part.host);
  }
  CHECK(tensors.host == tensors.device);
  const auto total = std::accumulate(sizes.begin(), sizes.end(), std::size_t{0});
  CHECK(plan.loads() == (total + piece_bytes - 1) / piece_bytes);
}
