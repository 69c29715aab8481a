#pragma once
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, init and final xor 0xFFFFFFFF) of a
// tensor's bytes, one value per kCrcBlockBytes block so that blocks overlap with I/O. An empty
// tensor has one CRC, of nothing (0).
//
// The checksums come from Intel ISA-L's crc32_iscsi (SSE4.2 crc32 instruction + PCLMUL folding,
// chosen at run time; > 10 GB/s per core), which is the same function as Boost.CRC's table-driven
// crc_optimal<32, 0x1EDC6F41, ...>, the reference kept in crc32c_reference for the tests
// (tests/checkpoint/crc32c_test.cpp). Files written with either verify with the other.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dlx::checkpoint::detail {

std::uint32_t crc32c(std::span<const std::byte> bytes);

// CRC-32C computed in pieces of at most `max_piece` bytes chained through the CRC register:
// crc32_iscsi takes an int length, so crc32c() feeds it pieces below 2 GiB. Exposed so that the
// tests can check the chaining at small piece sizes.
std::uint32_t crc32c_in_pieces(std::span<const std::byte> bytes, std::size_t max_piece);

// Incremental form: crc32c_extend(crc32c(a), b) == crc32c(a ++ b); crc32c_extend(0, b) == crc32c(b).
std::uint32_t crc32c_extend(std::uint32_t crc, std::span<const std::byte> bytes);

// Boost.CRC's byte-wise CRC-32C (about 200 MB/s): the reference the fast path is tested against.
std::uint32_t crc32c_reference(std::span<const std::byte> bytes);

std::size_t crc_block_count(std::uint64_t byte_size);

// All block CRCs of `bytes`, computed by up to `threads` threads.
std::vector<std::uint32_t> block_crc32c(std::span<const std::byte> bytes, unsigned threads);

// Threads to use for checksums. One core checksums faster than any disk writes, so 1.
unsigned checksum_threads();

}  // namespace dlx::checkpoint::detail
