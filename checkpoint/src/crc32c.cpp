// SPDX-License-Identifier: Apache-2.0
#include "crc32c.hpp"

#include <algorithm>

#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/common/parallel_for.hpp"

namespace dlx::checkpoint::detail {

std::size_t crc_block_count(std::uint64_t byte_size) {
  return std::max<std::size_t>(1, (byte_size + kCrcBlockBytes - 1) / kCrcBlockBytes);
}

std::vector<std::uint32_t> block_crc32c(std::span<const std::byte> bytes, unsigned threads) {
  std::vector<std::uint32_t> crcs(crc_block_count(bytes.size()));
  parallel_for(crcs.size(), threads, [&](std::size_t i) {
    const auto begin = i * kCrcBlockBytes;
    crcs[i] = crc32c(bytes.subspan(begin, std::min<std::size_t>(kCrcBlockBytes, bytes.size() - begin)));
  });
  return crcs;
}

unsigned checksum_threads() { return 1; }

}  // namespace dlx::checkpoint::detail
