// SPDX-License-Identifier: Apache-2.0
// read_tensors: the bytes of a checkpoint's tensors, straight from the file offsets HDF5 reports
// for their contiguous datasets (pread, piece by piece, from the descriptor checked at open),
// each piece checksummed while it is still in the CPU cache; a large load's CRC blocks are
// shared out over a few threads. The reader admitted only tensors whose bytes
// lie inside the file (h5::stored_extent), so the reads are bounded by the file's size.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "checkpoint_reader.hpp"
#include "crc32c.hpp"
#include "device_copy.hpp"
#include "dlx/common/parallel_for.hpp"
#include "dlx/common/usable_cpus.hpp"
#include "dlx/h5/error.hpp"

namespace dlx::checkpoint::detail {
namespace {

void read_exactly(int fd, std::byte* out, std::uint64_t bytes, std::uint64_t offset,
                  const std::string& what, const std::filesystem::path& path) {
  std::uint64_t done = 0;
  while (done < bytes) {
    auto n = ::pread(fd, out + done, bytes - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      int error = errno;
      throw CheckpointError(fmt::format("{}: cannot read {}: {}", path.string(), what,
                                        std::strerror(error)),
                            error);
    }
    if (n == 0)
      h5::throw_format_error(path, fmt::format("{} ends past the end of the file (truncated)", what));
    done += static_cast<std::uint64_t>(n);
  }
}

void compare(const TensorInfo& info, const std::vector<std::uint32_t>& actual,
             const std::filesystem::path& path) {
  for (std::size_t i = 0; i < actual.size(); ++i)
    if (actual[i] != info.crc32c[i])
      h5::throw_format_error(
          path, fmt::format("checksum mismatch in tensor '{}' (block {} of {}: CRC-32C {:08x}, "
                            "stored {:08x}): the file is damaged",
                            info.name, i, actual.size(), actual[i], info.crc32c[i]));
}

// Bytes per pread: small enough to be checksummed from the cache, large enough that system calls
// cost nothing (measured: 256 KiB to 4 MiB read equally fast here).
constexpr std::uint64_t kReadPieceBytes = std::uint64_t{1} << 20;
// How far ahead of the piece being read the reads are started.
constexpr std::uint64_t kPrefetchBytes = std::uint64_t{32} << 20;

// Where a block's pieces go: host memory, a device (through pinned pieces of `upload`), or
// nowhere (verified through `scratch`).
struct BlockTarget {
  std::byte* host = nullptr;
  std::byte* device = nullptr;
  DeviceUpload* upload = nullptr;
  std::span<std::byte> scratch;
};

// One CRC block of a tensor (kCrcBlockBytes, the last one shorter): read piece by piece into
// the target's host memory + the block's start, into a pinned piece sent on to the device
// memory + the block's start, or through `scratch`; each piece checksummed right after pread
// put it in the CPU cache. The reads of the block and of
// kPrefetchBytes after it are started first (POSIX_FADV_WILLNEED starts them and returns), so
// the device reads ahead while the CPU checksums: the kernel's own readahead alone left it idle
// during each piece's CRC. Returns the block's CRC-32C.
std::uint32_t read_block(int fd, const TensorInfo& info, std::uint64_t offset, std::size_t block,
                         const BlockTarget& target, const std::string& what,
                         const std::filesystem::path& path) {
  const auto block_begin = block * kCrcBlockBytes;
  const auto block_end = std::min<std::uint64_t>(info.bytes, block_begin + kCrcBlockBytes);
  const auto ahead_end = std::min<std::uint64_t>(info.bytes, block_end + kPrefetchBytes);
  ::posix_fadvise(fd, static_cast<off_t>(offset + block_begin),
                  static_cast<off_t>(ahead_end - block_begin), POSIX_FADV_WILLNEED);
  std::uint32_t crc = 0;  // the CRC of nothing; crc32c_extend continues it
  for (auto begin = block_begin; begin < block_end; begin += kReadPieceBytes) {
    const auto length = std::min<std::uint64_t>(kReadPieceBytes, block_end - begin);
    std::byte* out = target.host != nullptr     ? target.host + begin
                     : target.device != nullptr ? target.upload->take()
                                                : target.scratch.data();
    read_exactly(fd, out, length, offset + begin, what, path);
    crc = crc32c_extend(crc, {out, length});
    if (target.device != nullptr) target.upload->send(out, target.device + begin, length);
  }
  return crc;
}

// Threads for reading `total` bytes: one below kSingleThreadBelow (starting threads would cost
// more than it saves), else up to kMaxReadThreads, as the CPUs the process may use allow. Reading is CPU-bound on a
// fast device (the copy out of the page cache, the CRC, the page faults of fresh memory): one
// thread took 0.86-0.95 s to verify a cold 1 GiB dlx.torch checkpoint (its moments into fresh
// tensors), two threads 0.68-0.76 s, a plain POSIX read 0.47-0.62 s (docs/benchmarks.md).
constexpr std::uint64_t kSingleThreadBelow = std::uint64_t{64} << 20;
constexpr unsigned kMaxReadThreads = 4;

unsigned threads_for_blocks(std::size_t blocks) {
  return static_cast<unsigned>(std::min<std::uint64_t>({usable_cpus(), kMaxReadThreads, blocks}));
}

unsigned read_threads(std::uint64_t total, std::size_t blocks) {
  return total < kSingleThreadBelow ? 1U : threads_for_blocks(blocks);
}

// One tensor of a list read by read_listed.
struct ListedRead {
  const TensorInfo* info;
  std::optional<std::uint64_t> offset;  // of its bytes in the file
  std::byte* destination;               // null: verify only (or for `device`)
  void* device;
};

// The CRC blocks of every listed tensor in list order (file order, for a load), shared out one
// at a time over `threads` (`threads_for` the total bytes and the number of blocks): with
// several threads the device sees reads a block or two apart, nearly one sequential stream. Each
// block's CRC lands in its own slot; they are compared in list order afterwards, so a damaged
// file names the same first bad block whatever the threads did.
template <class ThreadsFor>
void read_listed(int fd, std::span<const ListedRead> list, const ThreadsFor& threads_for,
                 const std::filesystem::path& path) {
  struct Block {
    std::size_t read;   // into `list`
    std::size_t block;  // of that tensor
  };
  std::vector<Block> blocks;
  std::vector<std::vector<std::uint32_t>> actual(list.size());
  std::vector<std::string> what(list.size());
  std::uint64_t total = 0;
  for (std::size_t r = 0; r < list.size(); ++r) {
    const auto& info = *list[r].info;
    what[r] = fmt::format("tensor '{}'", info.name);
    if (info.bytes == 0) {
      actual[r] = {crc32c(std::span<const std::byte>{})};
      continue;
    }
    if (!list[r].offset)  // stored_extent gives every tensor with bytes one
      h5::throw_format_error(path, fmt::format("tensor '{}' has no place in the file", info.name));
    actual[r].resize(crc_block_count(info.bytes));
    for (std::size_t b = 0; b < actual[r].size(); ++b) blocks.push_back({r, b});
    total += info.bytes;
  }
  const unsigned threads = threads_for(total, blocks.size());
  std::optional<DeviceUpload> upload;  // two pinned pieces per thread, made on this thread
  if (std::any_of(list.begin(), list.end(), [](const ListedRead& r) { return r.device; }))
    upload.emplace(2 * std::size_t{threads}, kReadPieceBytes);
  parallel_for(blocks.size(), threads, [&](std::size_t i) {
    const auto [r, b] = blocks[i];
    const auto& info = *list[r].info;
    std::vector<std::byte> scratch;  // verify-only: one piece
    if (list[r].destination == nullptr && list[r].device == nullptr)
      scratch.resize(std::min<std::uint64_t>(info.bytes - b * kCrcBlockBytes, kReadPieceBytes));
    const BlockTarget target{list[r].destination, static_cast<std::byte*>(list[r].device),
                             upload ? &*upload : nullptr, scratch};
    actual[r][b] = read_block(fd, info, *list[r].offset, b, target, what[r], path);
  });
  if (upload) upload->finish();  // every piece is on the device before the load returns
  for (std::size_t r = 0; r < list.size(); ++r) compare(*list[r].info, actual[r], path);
}

// A second read of deferred tensors comes from the page cache as a rule, so threads pay off
// much sooner than for a cold load: a model of 300 tensors of 1 MiB was read into place at
// 2 GB/s on one thread.
constexpr std::uint64_t kDeferredSingleThreadBelow = std::uint64_t{4} << 20;

}  // namespace

void read_tensors(const OpenCheckpoint& checkpoint, std::span<const TensorRead> reads,
                  const std::filesystem::path& path) {
  std::vector<ListedRead> list;
  list.reserve(reads.size());
  for (const auto& read : reads) {
    list.push_back({&checkpoint.summary.tensors[read.index], checkpoint.offsets[read.index],
                    read.destination, read.device});
  }
  read_listed(checkpoint.fd.get(), list, read_threads, path);
}

void read_deferred_tensors(int fd, std::span<const DeferredTensorRead> reads,
                           const std::filesystem::path& path) {
  std::vector<ListedRead> list;
  list.reserve(reads.size());
  for (const auto& read : reads) list.push_back({read.info, read.offset, read.destination, nullptr});
  // Whole tensors and the blocks of large ones alike are shared out over the threads: a CPU
  // model's second read went from 0.049 s to 0.028 s of a 0.32 s load on an H200's host once
  // a large tensor's blocks were (docs/benchmarks.md); many small tensors gain the same way.
  read_listed(fd, list, [](std::uint64_t total, std::size_t blocks) {
    return total < kDeferredSingleThreadBelow ? 1U : threads_for_blocks(blocks);
  }, path);
}

}  // namespace dlx::checkpoint::detail
