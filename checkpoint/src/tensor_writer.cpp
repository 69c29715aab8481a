// SPDX-License-Identifier: Apache-2.0
#include "tensor_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "crc32c.hpp"
#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/checkpoint/error.hpp"

namespace dlx::checkpoint::detail {
namespace {

// Bytes per pwrite: checksummed just before the write; large enough that the device gets long
// requests and the system calls cost nothing. A multiple of kDirectAlign dividing kCrcBlockBytes.
constexpr std::uint64_t kWritePieceBytes = std::uint64_t{8} << 20;
// O_DIRECT's alignment of memory, file offset and length: the largest logical block in use.
constexpr std::uint64_t kDirectAlign = 4096;
// Buffered bytes handed to writeback at a time: enough for the device to work on while the next
// ones are copied, few enough calls that they cost nothing.
constexpr std::uint64_t kWritebackBytes = std::uint64_t{32} << 20;
static_assert(kCrcBlockBytes % kWritePieceBytes == 0 && kWritePieceBytes % kDirectAlign == 0);

[[noreturn]] void fail(const std::string& what, const std::filesystem::path& path, int error) {
  throw CheckpointError(fmt::format("{}: cannot {}: {}", path.string(), what, std::strerror(error)),
                        error);
}

bool aligned(std::uint64_t value) { return value % kDirectAlign == 0; }

}  // namespace

TensorFileWriter::TensorFileWriter(const std::filesystem::path& path) : path_(path) {
  buffered_ = UniqueFd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!buffered_) fail("open it to write the tensor bytes", path_, errno);
  direct_ = UniqueFd(::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_DIRECT));  // may be refused
}

void TensorFileWriter::write_buffered(std::span<const std::byte> piece, std::uint64_t offset,
                                      const std::string& what) {
  const auto written = piece.size();
  while (!piece.empty()) {
    auto n = ::pwrite(buffered_.get(), piece.data(), piece.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("write " + what, path_, errno);
    piece = piece.subspan(static_cast<std::size_t>(n));
    offset += static_cast<std::uint64_t>(n);
  }
  // Start writeback of what accumulated: only a request (an error here changes nothing, and a
  // device error shows in the fsync that publishes the file).
  const auto end = offset;
  const auto begin = end - written;
  if (begin != writeback_to_) writeback_from_ = begin;  // not contiguous: a new range
  writeback_to_ = end;
  if (writeback_to_ - writeback_from_ >= kWritebackBytes) {
    static_cast<void>(::sync_file_range(buffered_.get(), static_cast<off_t>(writeback_from_),
                                        static_cast<off_t>(writeback_to_ - writeback_from_),
                                        SYNC_FILE_RANGE_WRITE));
    writeback_from_ = writeback_to_;
  }
}

// False when the file system turned O_DIRECT down for this request (then nothing was written).
bool TensorFileWriter::write_direct(std::span<const std::byte> piece, std::uint64_t offset,
                                    const std::string& what) {
  const std::byte* source = piece.data();
  if (!aligned(reinterpret_cast<std::uintptr_t>(source))) {
    if (!bounce_.data()) bounce_ = HostBuffer::allocate(kWritePieceBytes);
    std::memcpy(bounce_.data(), source, piece.size());
    source = bounce_.data();
  }
  std::uint64_t done = 0;
  while (done < piece.size()) {
    auto n = ::pwrite(direct_.get(), source + done, piece.size() - done,
                      static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EINVAL && done == 0) return false;
    if (n < 0) fail("write " + what, path_, errno);
    done += static_cast<std::uint64_t>(n);
    if (!aligned(done)) {  // a short write off the alignment: finish through the page cache
      write_buffered(piece.subspan(done), offset + done, what);
      break;
    }
  }
  return true;
}

void TensorFileWriter::write_piece(std::span<const std::byte> piece, std::uint64_t offset,
                                   const std::string& what) {
  if (!direct_) return write_buffered(piece, offset, what);
  // Unaligned head and tail through the page cache, the aligned middle direct.
  auto head = std::min<std::uint64_t>(piece.size(), (kDirectAlign - offset % kDirectAlign) % kDirectAlign);
  auto middle = (piece.size() - head) / kDirectAlign * kDirectAlign;
  if (head > 0) write_buffered(piece.first(head), offset, what);
  if (middle > 0 && !write_direct(piece.subspan(head, middle), offset + head, what)) {
    direct_.reset();
    write_buffered(piece.subspan(head, middle), offset + head, what);
  }
  if (head + middle < piece.size())
    write_buffered(piece.subspan(head + middle), offset + head + middle, what);
}

std::vector<std::uint32_t> TensorFileWriter::write(std::span<const std::byte> bytes,
                                                   std::uint64_t offset,
                                                   const std::string& tensor_name) {
  const auto what = fmt::format("tensor '{}'", tensor_name);
  std::vector<std::uint32_t> crcs(crc_block_count(bytes.size()), crc32c(std::span<const std::byte>{}));
  for (std::size_t block = 0; block * kCrcBlockBytes < bytes.size(); ++block) {
    const auto block_begin = block * kCrcBlockBytes;
    const auto block_end = std::min<std::uint64_t>(bytes.size(), block_begin + kCrcBlockBytes);
    std::uint32_t crc = 0;  // the CRC of nothing; crc32c_extend continues it
    for (auto begin = block_begin; begin < block_end; begin += kWritePieceBytes) {
      auto piece = bytes.subspan(begin, std::min<std::uint64_t>(kWritePieceBytes, block_end - begin));
      crc = crc32c_extend(crc, piece);
      write_piece(piece, offset + begin, what);
    }
    crcs[block] = crc;
  }
  return crcs;
}

void TensorFileWriter::close() {
  if (direct_ && ::close(direct_.release()) != 0) fail("close it after writing", path_, errno);
  if (::close(buffered_.release()) != 0) fail("close it after writing", path_, errno);
}

}  // namespace dlx::checkpoint::detail
