#pragma once
// CRC-32C (Castagnoli, Boost.CRC) of a tensor's bytes, one value per kCrcBlockBytes block so that
// blocks are checksummed in parallel and overlap with I/O. An empty tensor has one CRC, of nothing.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dlx::checkpoint::detail {

std::uint32_t crc32c(std::span<const std::byte> bytes);

std::size_t crc_block_count(std::uint64_t byte_size);

// All block CRCs of `bytes`, computed by up to `threads` threads.
std::vector<std::uint32_t> block_crc32c(std::span<const std::byte> bytes, unsigned threads);

// Threads to use for checksums: the cores this process may use, at least 1.
unsigned checksum_threads();

}  // namespace dlx::checkpoint::detail
