// SPDX-License-Identifier: Apache-2.0
#include "dlx/common/crc32c.hpp"

#include <algorithm>
#include <climits>

#include <isa-l/crc.h>

namespace dlx {
namespace {

// ISA-L's crc32_iscsi(buffer, length, register) neither inverts the register on entry nor the
// result on exit: the standard CRC-32C is crc32_iscsi(b, n, 0xFFFFFFFF) ^ 0xFFFFFFFF, and the
// un-inverted result is the register to continue with.
constexpr std::uint32_t kInvert = 0xFFFFFFFFu;

// The largest piece crc32_iscsi takes (its length is an int), rounded down to 1 GiB.
constexpr std::size_t kMaxPiece = std::size_t{1} << 30;
static_assert(kMaxPiece <= static_cast<std::size_t>(INT_MAX));

std::uint32_t run_register(std::uint32_t reg, std::span<const std::byte> bytes, std::size_t max_piece) {
  max_piece = std::clamp<std::size_t>(max_piece, 1, kMaxPiece);
  while (!bytes.empty()) {
    const auto piece = std::min(bytes.size(), max_piece);
    // crc32_iscsi does not write through the pointer; its signature lacks the const.
    auto* data = const_cast<unsigned char*>(reinterpret_cast<const unsigned char*>(bytes.data()));
    reg = crc32_iscsi(data, static_cast<int>(piece), reg);
    bytes = bytes.subspan(piece);
  }
  return reg;
}

}  // namespace

std::uint32_t crc32c_in_pieces(std::span<const std::byte> bytes, std::size_t max_piece) {
  return run_register(kInvert, bytes, max_piece) ^ kInvert;
}

std::uint32_t crc32c(std::span<const std::byte> bytes) { return crc32c_in_pieces(bytes, kMaxPiece); }

std::uint32_t crc32c_extend(std::uint32_t crc, std::span<const std::byte> bytes) {
  return run_register(crc ^ kInvert, bytes, kMaxPiece) ^ kInvert;
}

}  // namespace dlx
