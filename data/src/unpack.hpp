#pragma once
// Archives staged unpacked: the tar family through libarchive (Debian's libarchive-dev), squashfs
// images through unsquashfs (Debian's squashfs-tools) run with common's bounded runner.
#include <cstdint>
#include <filesystem>

#include "manifest.hpp"

namespace dlx::data {

// Unpacks `archive` into the existing, empty directory `destination`. Entries with absolute
// paths or ".." are refused, as is writing through a link the archive made. Throws DataError.
void unpack_archive(const std::filesystem::path& archive, SourceKind kind, const std::filesystem::path& destination);

}  // namespace dlx::data
