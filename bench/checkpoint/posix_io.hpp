// SPDX-License-Identifier: Apache-2.0
#pragma once
// The raw-I/O baselines of bench_checkpoint: POSIX write+fsync and read of the same bytes, and
// dropping a file from the page cache so that reads come from the device.
#include <cstddef>
#include <filesystem>
#include <span>
#include <vector>

namespace dlx::bench {

// write() of each buffer, then fsync. With `direct`: O_DIRECT pwrite()s of 8 MiB, then fsync
// (save_checkpoint's way, checkpoint/src/tensor_writer.hpp; buffers, sizes and offsets must be
// page-aligned): the reference for what HDF5 and the CRCs cost on top of the same I/O.
void posix_write_fsync(const std::filesystem::path& path,
                       const std::vector<std::span<const std::byte>>& buffers,
                       bool direct = false);
void posix_read(const std::filesystem::path& path, std::span<std::byte> into);
void drop_from_page_cache(const std::filesystem::path& path);

}  // namespace dlx::bench
