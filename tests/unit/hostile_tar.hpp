// SPDX-License-Identifier: Apache-2.0
#pragma once
// Tar archives with whatever entries a test needs, hostile ones included (a "." that is a link,
// names with "..", hard links out, FIFOs), written by libarchive's own writer: `tar` refuses to
// make most of them.
#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace dlx::testing {

struct TarEntry {
  std::string name;
  mode_t type = AE_IFREG;   // AE_IFREG, AE_IFDIR, AE_IFLNK, AE_IFIFO
  std::string data;         // a regular file's bytes
  std::string symlink;      // AE_IFLNK's target
  std::string hardlink;     // set: a hard link to this name
  mode_t perm = 0644;
  std::size_t zeros = 0;    // a regular file of this many zero bytes instead of `data`
};

inline TarEntry tar_file(std::string name, std::string data) {
  TarEntry entry;
  entry.name = std::move(name);
  entry.data = std::move(data);
  return entry;
}
inline TarEntry tar_zeros(std::string name, std::size_t bytes) {
  TarEntry entry;
  entry.name = std::move(name);
  entry.zeros = bytes;
  return entry;
}
inline TarEntry tar_symlink(std::string name, std::string target) {
  TarEntry entry;
  entry.name = std::move(name);
  entry.type = AE_IFLNK;
  entry.symlink = std::move(target);
  return entry;
}
inline TarEntry tar_hardlink(std::string name, std::string target) {
  TarEntry entry;
  entry.name = std::move(name);
  entry.hardlink = std::move(target);
  return entry;
}
inline TarEntry tar_directory(std::string name, mode_t perm) {
  TarEntry entry;
  entry.name = std::move(name);
  entry.type = AE_IFDIR;
  entry.perm = perm;
  return entry;
}
inline TarEntry tar_fifo(std::string name) {
  TarEntry entry;
  entry.name = std::move(name);
  entry.type = AE_IFIFO;
  return entry;
}

// Writes `entries` as a GNU tar (long names as ././@LongLink) to `path`, compressed with
// `filter` (ARCHIVE_FILTER_NONE, ARCHIVE_FILTER_ZSTD, ...).
inline void write_tar(const std::filesystem::path& path, const std::vector<TarEntry>& entries,
                      int filter = ARCHIVE_FILTER_NONE) {
  std::unique_ptr<struct archive, decltype(&archive_write_free)> out(archive_write_new(), archive_write_free);
  REQUIRE(archive_write_set_format_gnutar(out.get()) == ARCHIVE_OK);
  if (filter != ARCHIVE_FILTER_NONE) REQUIRE(archive_write_add_filter(out.get(), filter) == ARCHIVE_OK);
  REQUIRE(archive_write_open_filename(out.get(), path.c_str()) == ARCHIVE_OK);
  const std::string zeros_block(1 << 20, '\0');
  for (const auto& spec : entries) {
    std::unique_ptr<struct archive_entry, decltype(&archive_entry_free)> entry(archive_entry_new(),
                                                                               archive_entry_free);
    archive_entry_set_pathname(entry.get(), spec.name.c_str());
    archive_entry_set_filetype(entry.get(), spec.type);
    archive_entry_set_perm(entry.get(), spec.perm);
    archive_entry_set_mtime(entry.get(), 1700000000, 0);
    const bool regular = spec.type == AE_IFREG && spec.hardlink.empty();
    const std::size_t size = spec.zeros != 0 ? spec.zeros : spec.data.size();
    archive_entry_set_size(entry.get(), regular ? static_cast<la_int64_t>(size) : 0);
    if (!spec.symlink.empty()) archive_entry_set_symlink(entry.get(), spec.symlink.c_str());
    if (!spec.hardlink.empty()) archive_entry_set_hardlink(entry.get(), spec.hardlink.c_str());
    INFO(archive_error_string(out.get()));
    REQUIRE(archive_write_header(out.get(), entry.get()) == ARCHIVE_OK);
    if (!regular) continue;
    if (spec.zeros == 0) {
      REQUIRE(archive_write_data(out.get(), spec.data.data(), spec.data.size()) ==
              static_cast<la_ssize_t>(spec.data.size()));
      continue;
    }
    for (std::size_t left = spec.zeros; left > 0;) {
      const std::size_t chunk = std::min(left, zeros_block.size());
      REQUIRE(archive_write_data(out.get(), zeros_block.data(), chunk) == static_cast<la_ssize_t>(chunk));
      left -= chunk;
    }
  }
  REQUIRE(archive_write_close(out.get()) == ARCHIVE_OK);
}

}  // namespace dlx::testing
