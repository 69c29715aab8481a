// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a source is, entry by entry, and the cache key derived from it. The key is the SHA-256 of
// a canonical text: the source path, its kind, and for every entry (sorted by relative path) its
// type, size, mode and mtime in ns (or, in checksum mode, the SHA-256 of its content). Any change
// the manifest sees (a file added, removed, resized, touched) gives a new key, so an entry of the
// cache never goes stale: it is only ever replaced by a new one.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace dlx::data {

enum class SourceKind { file, directory, tar_archive, squashfs_image };

const char* kind_name(SourceKind kind);

struct ManifestEntry {
  std::string relative;     // from the source directory ("" for the source itself)
  char type = 'f';          // 'f' regular file, 'd' directory, 'l' symbolic link
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  mode_t mode = 0;          // permission bits
  std::string link_target;  // for 'l'
};

struct Manifest {
  std::filesystem::path source;
  SourceKind kind = SourceKind::file;
  std::vector<ManifestEntry> entries;  // sorted by `relative`; one entry for a file or an archive
  std::uint64_t bytes = 0;             // regular files' sizes (an archive's own size)
};

// The kind a path names: an archive by its name (.tar, .tar.gz, .tgz, .tar.bz2, .tbz2, .tar.xz,
// .txz, .tar.zst, .tzst; .squashfs, .sqfs), else a file or a directory.
SourceKind kind_of(const std::filesystem::path& source, bool is_directory);

// Throws the DataError for a path that cannot be read (`error_number`: the errno), with the fix.
[[noreturn]] void throw_unreadable(const std::filesystem::path& path, int error_number);

// Walks `source` (following a link only at the source itself). Throws DataError naming the path
// that is missing, unreadable, or neither a file, a directory nor a link (a FIFO, a device).
Manifest read_manifest(const std::filesystem::path& source);

// The cache key (64 hex digits). With `checksum`, file contents are read and hashed instead of
// their mtimes being used.
std::string manifest_key(const Manifest& manifest, bool checksum);

}  // namespace dlx::data
