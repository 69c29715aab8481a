// SPDX-License-Identifier: Apache-2.0
#pragma once
// CRC-32C (Castagnoli: reflected polynomial 0x82F63B78, init and final xor 0xFFFFFFFF), the one
// implementation every dlx file format uses: checkpoint tensor blocks and metadata, the metrics
// log, the searcher's journal records and snapshot, TensorBoard's TFRecord framing.
//
// Intel ISA-L's crc32_iscsi computes it (SSE4.2 crc32 instruction + PCLMUL folding, chosen at run
// time; > 10 GB/s per core). It is the same function as Boost.CRC's table-driven
// crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>, the definition the tests check
// it against on every length, alignment and split point (tests/checkpoint/crc32c_test.cpp), so
// files written before dlx switched from Boost verify, and any CRC-32C reads dlx's files.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace dlx {

// The CRC-32C of `bytes`; of nothing, 0.
std::uint32_t crc32c(std::span<const std::byte> bytes);
inline std::uint32_t crc32c(std::string_view text) {
  return crc32c(std::as_bytes(std::span(text.data(), text.size())));
}

// Incremental form: crc32c_extend(crc32c(a), b) == crc32c(a ++ b); crc32c_extend(0, b) == crc32c(b).
std::uint32_t crc32c_extend(std::uint32_t crc, std::span<const std::byte> bytes);

// crc32c() computed in pieces of at most `max_piece` bytes chained through the CRC register:
// crc32_iscsi takes an int length, so crc32c() feeds it pieces of at most 1 GiB. Exposed so that
// the tests can check the chaining at small piece sizes.
std::uint32_t crc32c_in_pieces(std::span<const std::byte> bytes, std::size_t max_piece);

}  // namespace dlx
