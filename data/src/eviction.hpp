// SPDX-License-Identifier: Apache-2.0
#pragma once
// Room for a new entry: least recently used entries of this user's cache that nobody holds are
// removed while the cache plus the new entry exceeds the cap, or while the file system's use
// (statvfs) plus the new entry is above the high watermark (then down to the low one).
#include <cstdint>
#include <filesystem>
#include <string>

#include "cache_dir.hpp"
#include "dlx/data/stage.hpp"

namespace dlx::data {

// Throws DataError naming the sizes and the knobs when the new entry cannot fit: over the cap
// even with every free entry gone, or more than the file system has free.
void make_room(const CacheDir& cache, const std::filesystem::path& source, std::uint64_t new_bytes,
               const CachePolicy& policy, std::FILE* log);

// The limit an archive's unpacked size is counted up to: the cap, else the file system's size
// (nothing larger could ever fit).
std::uint64_t counting_limit(const CacheDir& cache, const CachePolicy& policy);

}  // namespace dlx::data
