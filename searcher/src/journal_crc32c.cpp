// CRC-32C (Castagnoli: reflected, polynomial 0x1EDC6F41, init and final xor 0xFFFFFFFF) for the
// journal's records and its snapshot. Intel ISA-L's crc32_iscsi computes it at several GB/s (the
// checkpoint library uses the same call), which matters once a snapshot of a 10,000-trial search
// (megabytes) is checked by every process that starts. Boost.CRC's table-driven crc_optimal is
// the definition, kept as the reference: tests/unit/searcher_journal_snapshot_test.cpp checks
// the two agree on every length and alignment.
#include <algorithm>
#include <climits>
#include <cstdint>

#include <boost/crc.hpp>
#include <isa-l/crc.h>

#include "dlx/searcher/journal.hpp"

namespace dlx::searcher {

std::uint32_t journal_crc32c(const char* data, std::size_t size) {
  // crc32_iscsi neither inverts the register on entry nor the result on exit, and takes an int
  // length: feed it pieces of at most 1 GiB.
  constexpr std::size_t kMaxPiece = std::size_t{1} << 30;
  static_assert(kMaxPiece <= static_cast<std::size_t>(INT_MAX));
  std::uint32_t reg = 0xFFFFFFFFu;
  while (size > 0) {
    auto piece = std::min(size, kMaxPiece);
    // crc32_iscsi does not write through the pointer; its signature lacks the const.
    auto* bytes = const_cast<unsigned char*>(reinterpret_cast<const unsigned char*>(data));
    reg = crc32_iscsi(bytes, static_cast<int>(piece), reg);
    data += piece;
    size -= piece;
  }
  return reg ^ 0xFFFFFFFFu;
}

// The reference, for the tests.
std::uint32_t journal_crc32c_reference(const char* data, std::size_t size) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(data, size);
  return crc.checksum();
}

}  // namespace dlx::searcher
