// SPDX-License-Identifier: Apache-2.0
// dlx's one CRC-32C (dlx/common/crc32c.hpp: ISA-L crc32_iscsi) against the reference, Boost.CRC's
// table-driven crc_optimal: same values on every length, alignment and split point, so checkpoints
// and journals written before the switch (Boost) still verify and those written after read back
// with any CRC-32C; and the checkpoint's per-block checksums (checkpoint/src/crc32c.hpp).
#include <sys/mman.h>

#include <cstring>
#include <random>
#include <vector>

#include <boost/crc.hpp>
#include <catch2/catch.hpp>

#include "crc32c.hpp"
#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/common/crc32c.hpp"

namespace {

using namespace dlx::checkpoint;
using namespace dlx::checkpoint::detail;
using dlx::crc32c;
using dlx::crc32c_extend;
using dlx::crc32c_in_pieces;

// Boost.CRC's byte-wise CRC-32C (about 200 MB/s): the definition the fast path is checked against.
std::uint32_t crc32c_reference(std::span<const std::byte> bytes) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(bytes.data(), bytes.size());
  return crc.checksum();
}

std::vector<std::byte> random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(rng());
  return out;
}

std::span<const std::byte> text(const char* s) { return std::as_bytes(std::span(s, std::strlen(s))); }

}  // namespace

TEST_CASE("crc32c: the standard check values of CRC-32C (Castagnoli)", "[crc32c]") {
  // RFC 3720 B.4 and the CRC catalogue: "123456789" -> e3069283, 32 zero bytes -> 8a9136aa.
  CHECK(crc32c(text("123456789")) == 0xe3069283u);
  CHECK(crc32c_reference(text("123456789")) == 0xe3069283u);
  std::vector<std::byte> zeros(32);
  CHECK(crc32c(zeros) == 0x8a9136aau);
  CHECK(crc32c(std::span<const std::byte>{}) == 0u);
  CHECK(crc32c_reference({}) == 0u);
}

TEST_CASE("crc32c: equals Boost.CRC on every length 0..1100 at every alignment 0..15", "[crc32c]") {
  auto bytes = random_bytes(1200, 7);
  std::span<const std::byte> all(bytes);
  for (std::size_t offset = 0; offset < 16; ++offset)
    for (std::size_t length = 0; length <= 1100; ++length) {
      auto piece = all.subspan(offset, length);
      auto expected = crc32c_reference(piece);
      if (crc32c(piece) != expected) FAIL("offset " << offset << " length " << length);
    }
}

TEST_CASE("crc32c: equals Boost.CRC on large odd lengths and block-sized buffers", "[crc32c]") {
  auto bytes = random_bytes(kCrcBlockBytes + 4099, 11);
  for (std::size_t length : {std::size_t{4095}, std::size_t{65537}, std::size_t{1} << 20,
                             (std::size_t{1} << 20) + 13, std::size_t{kCrcBlockBytes},
                             std::size_t{kCrcBlockBytes} + 4099}) {
    std::span<const std::byte> piece(bytes.data() + 3, length);
    CHECK(crc32c(piece) == crc32c_reference(piece));
  }
}

TEST_CASE("crc32c: chaining through the register equals one pass, at every split point", "[crc32c]") {
  auto bytes = random_bytes(777, 3);
  std::span<const std::byte> all(bytes);
  auto whole = crc32c_reference(all);
  for (std::size_t split = 0; split <= all.size(); ++split) {
    auto chained = crc32c_extend(crc32c(all.first(split)), all.subspan(split));
    if (chained != whole) FAIL("split at " << split);
  }
  // Pieces of every size from 1 byte up: the path crc32c() takes for buffers over 1 GiB.
  for (std::size_t piece = 1; piece <= 70; ++piece)
    if (crc32c_in_pieces(all, piece) != whole) FAIL("pieces of " << piece << " bytes");
  CHECK(crc32c_extend(0, all) == whole);
}

TEST_CASE("crc32c: block checksums equal Boost.CRC per block, with 1 and 3 threads", "[crc32c]") {
  auto bytes = random_bytes(2 * kCrcBlockBytes + 5, 5);
  std::span<const std::byte> all(bytes);
  std::vector<std::uint32_t> expected{crc32c_reference(all.subspan(0, kCrcBlockBytes)),
                                      crc32c_reference(all.subspan(kCrcBlockBytes, kCrcBlockBytes)),
                                      crc32c_reference(all.subspan(2 * kCrcBlockBytes))};
  CHECK(block_crc32c(all, 1) == expected);
  CHECK(block_crc32c(all, 3) == expected);
  CHECK(block_crc32c({}, 1) == std::vector<std::uint32_t>{0});
}

TEST_CASE("crc32c: a buffer over 2 GiB (past crc32_iscsi's int length) equals Boost.CRC",
          "[crc32c][slow]") {
  // Untouched anonymous pages read as the shared zero page, so this costs 3 pages of memory;
  // a few written bytes at the start, across the 2 GiB boundary and at the end make it not all
  // zeros. A length truncated to an int would give a different CRC.
  const std::size_t size = (std::size_t{1} << 31) + 4099;
  void* map = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                     -1, 0);
  REQUIRE(map != MAP_FAILED);
  auto* bytes = static_cast<std::byte*>(map);
  for (std::size_t at : {std::size_t{0}, (std::size_t{1} << 31) - 2, size - 1})
    for (std::size_t i = 0; i < 3 && at + i < size; ++i) bytes[at + i] = std::byte{0x5a};
  std::span<const std::byte> all(bytes, size);
  auto fast = crc32c(all);
  auto reference = crc32c_reference(all);
  ::munmap(map, size);
  CHECK(fast == reference);
}
