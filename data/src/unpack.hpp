// SPDX-License-Identifier: Apache-2.0
#pragma once
// Archives staged unpacked: the tar family through libarchive (Debian's libarchive-dev), squashfs
// images through unsquashfs (Debian's squashfs-tools) run with common's bounded runner.
//
// What an archive may hold (each refused with the entry's name otherwise): regular files,
// directories and symbolic links, every name relative and without "..", hard links to names of
// the archive itself, "." only as a directory (a "." that is a link or a file would replace the
// unpacked directory itself: libarchive does that, and DLX_DATA_DIR would then point where the
// archive says); nothing written through a link the archive made. The unpacked size is what the
// cache's cap and the file system's free space are checked against, counted before anything is
// written (unpacked_size) and enforced as the files are written.
#include <cstdint>
#include <filesystem>
#include <optional>

#include "manifest.hpp"

namespace dlx::data {

// The bytes of the regular files `archive` unpacks to, read from its headers (a compressed tar is
// decompressed once for it; a squashfs image's listing is read); nullopt as soon as they pass
// `limit`. Throws DataError for an entry the unpack would refuse, or an archive it cannot read.
std::optional<std::uint64_t> unpacked_size(const std::filesystem::path& archive, SourceKind kind,
                                           std::uint64_t limit);

// Unpacks `archive` into the empty directory `destination` (open; `shown` is its path), relative
// to that handle: a tar in a child process whose working directory it is (fchdir changes every
// thread's, so never in this process), a squashfs image through /proc/<pid>/fd. Stops with a
// DataError when the files pass `budget` bytes (the archive changed since it was counted).
// Throws DataError, naming the archive, the entry and what to do.
void unpack_archive(const std::filesystem::path& archive, SourceKind kind, int destination,
                    const std::filesystem::path& shown, std::uint64_t budget);

// Internal to the two unpackers (unpack_tar.cpp, unpack_squashfs.cpp).
[[noreturn]] void unpack_failed(const std::filesystem::path& archive, const std::string& why);
std::optional<std::uint64_t> tar_unpacked_size(const std::filesystem::path& archive, std::uint64_t limit);
void unpack_tar(const std::filesystem::path& archive, int destination, std::uint64_t budget);
std::optional<std::uint64_t> squashfs_unpacked_size(const std::filesystem::path& image, std::uint64_t limit);
void unpack_squashfs(const std::filesystem::path& image, int destination);

}  // namespace dlx::data
