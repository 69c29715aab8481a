// SPDX-License-Identifier: Apache-2.0
#pragma once
// The CRC-32C of a tensor's bytes, one value per kCrcBlockBytes block so that blocks overlap with
// I/O. An empty tensor has one CRC, of nothing (0). The CRC itself is dlx::crc32c
// (dlx/common/crc32c.hpp: ISA-L, checked against Boost.CRC in the tests).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "dlx/common/crc32c.hpp"

namespace dlx::checkpoint::detail {

std::size_t crc_block_count(std::uint64_t byte_size);

// All block CRCs of `bytes`, computed by up to `threads` threads (common's parallel_for; 1 starts
// none).
std::vector<std::uint32_t> block_crc32c(std::span<const std::byte> bytes, unsigned threads);

// Threads to use for checksums. One core checksums faster than any disk writes, so 1.
unsigned checksum_threads();

}  // namespace dlx::checkpoint::detail
