// SPDX-License-Identifier: Apache-2.0
#include "unpack.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "cache_entries.hpp"
#include "dlx/common/byte_size.hpp"
#include "dlx/data/stage.hpp"

namespace dlx::data {

namespace fs = std::filesystem;

void unpack_failed(const fs::path& archive, const std::string& why) {
  throw DataError(fmt::format("cannot unpack {}: {} (check the archive with `tar -tvf` or `unsquashfs -lls`, or "
                              "stage its unpacked directory instead)", archive.string(), why));
}

std::optional<std::uint64_t> unpacked_size(const fs::path& archive, SourceKind kind, std::uint64_t limit) {
  return kind == SourceKind::squashfs_image ? squashfs_unpacked_size(archive, limit)
                                            : tar_unpacked_size(archive, limit);
}

void unpack_archive(const fs::path& archive, SourceKind kind, int destination, const fs::path& shown,
                    std::uint64_t budget) {
  if (kind == SourceKind::squashfs_image) {
    unpack_squashfs(archive, destination);
    // unsquashfs writes on its own: what it wrote is counted afterwards, before the entry is used.
    const std::uint64_t written = tree_bytes(destination, shown);
    if (written > budget) {
      unpack_failed(archive, fmt::format("it unpacked to {}, more than the {} its listing showed when it was counted "
                                         "(was it replaced while it was staged?)",
                                         format_byte_size(written), format_byte_size(budget)));
    }
  } else {
    unpack_tar(archive, destination, budget);
  }
  // The entry's own directory stays the user's private one whatever mode the archive gave ".".
  if (::fchmod(destination, 0700) != 0) {
    unpack_failed(archive, fmt::format("cannot set the mode of {}: {}", shown.string(), std::strerror(errno)));
  }
}

}  // namespace dlx::data
