// SPDX-License-Identifier: Apache-2.0
#pragma once
// The tensor bytes of a checkpoint being saved, written by dlx itself rather than through
// H5Dwrite: HDF5 has allocated each contiguous dataset at creation (h5::create_array), so its
// bytes have a fixed file offset, and TensorFileWriter puts them there with large pwrite()s on its
// own descriptors, checksumming each piece just before it is written (while it is in the CPU
// cache, as the loader does after each pread). The file stays an ordinary HDF5 file: HDF5 writes
// all of its metadata and never touches these bytes (no fill values).
//
// Direct I/O: the page-aligned middle of each tensor goes through an O_DIRECT descriptor, from
// the tensor's memory when it is page-aligned (the async writer's snapshot buffers are) or else
// through an aligned bounce buffer. Buffered writes cost a copy into the page cache, which on a
// busy node is most of a save's CPU time (taken from the training threads) and most of its wall
// time; with O_DIRECT the device reads the bytes itself. The unaligned head and tail of a tensor
// (and everything, where the file system refuses O_DIRECT: tmpfs, some FUSE) are written through
// the page cache, and writeback of those ranges is started early with sync_file_range so that
// the final fsync only waits for the rest.
//
// Neither changes what is durable: nothing counts until publish_file's fsync (which also flushes
// the device's write cache), rename and directory fsync.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "dlx/checkpoint/tensor.hpp"
#include "dlx/common/unique_fd.hpp"

namespace dlx::checkpoint::detail {

class TensorFileWriter {
 public:
  // Opens `path` (created by HDF5, still open there) for writing. Throws CheckpointError.
  explicit TensorFileWriter(const std::filesystem::path& path);

  // Writes `bytes` at `offset` and returns their block CRC-32Cs (one per kCrcBlockBytes, as
  // block_crc32c). Throws CheckpointError naming the tensor, the file and errno (ENOSPC, EIO).
  std::vector<std::uint32_t> write(std::span<const std::byte> bytes, std::uint64_t offset,
                                   const std::string& tensor_name);

  // Closes the descriptors, reporting a failed close (a deferred write error on some systems).
  void close();

 private:
  void write_piece(std::span<const std::byte> piece, std::uint64_t offset, const std::string& what);
  void write_buffered(std::span<const std::byte> piece, std::uint64_t offset,
                      const std::string& what);
  bool write_direct(std::span<const std::byte> piece, std::uint64_t offset, const std::string& what);

  std::filesystem::path path_;
  UniqueFd buffered_;
  UniqueFd direct_;  // invalid where the file system refuses O_DIRECT
  HostBuffer bounce_;
  std::uint64_t writeback_from_ = 0, writeback_to_ = 0;
};

}  // namespace dlx::checkpoint::detail
