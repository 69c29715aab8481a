#include "crc32c.hpp"

#include <algorithm>
#include <thread>

#include "dlx/checkpoint/checkpoint.hpp"

namespace dlx::checkpoint::detail {

std::size_t crc_block_count(std::uint64_t byte_size) {
  return std::max<std::size_t>(1, (byte_size + kCrcBlockBytes - 1) / kCrcBlockBytes);
}

std::vector<std::uint32_t> block_crc32c(std::span<const std::byte> bytes, unsigned threads) {
  auto blocks = crc_block_count(bytes.size());
  std::vector<std::uint32_t> crcs(blocks);
  auto block = [&](std::size_t i) {
    auto begin = i * kCrcBlockBytes;
    auto length = std::min<std::size_t>(kCrcBlockBytes, bytes.size() - begin);
    crcs[i] = crc32c(bytes.subspan(begin, length));
  };
  auto workers = std::min<std::size_t>(std::max(1u, threads), blocks);
  if (workers == 1) {
    for (std::size_t i = 0; i < blocks; ++i) block(i);
    return crcs;
  }
  std::vector<std::jthread> pool;
  for (std::size_t w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      for (std::size_t i = w; i < blocks; i += workers) block(i);
    });
  pool.clear();  // joins
  return crcs;
}

unsigned checksum_threads() { return 1; }

}  // namespace dlx::checkpoint::detail
