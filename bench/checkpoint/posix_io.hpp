#pragma once
// The raw-I/O baselines of bench_checkpoint: POSIX write+fsync and read of the same bytes, and
// dropping a file from the page cache so that reads come from the device.
#include <cstddef>
#include <filesystem>
#include <span>
#include <vector>

namespace dlx::bench {

void posix_write_fsync(const std::filesystem::path& path,
                       const std::vector<std::span<const std::byte>>& buffers);
void posix_read(const std::filesystem::path& path, std::span<std::byte> into);
void drop_from_page_cache(const std::filesystem::path& path);

}  // namespace dlx::bench
