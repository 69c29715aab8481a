// SPDX-License-Identifier: Apache-2.0
#include "manifest.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "dlx/common/file_kind.hpp"
#include "dlx/data/stage.hpp"

namespace dlx::data {

namespace fs = std::filesystem;

[[noreturn]] void throw_unreadable(const fs::path& path, int error_number) {
  throw DataError(fmt::format("cannot read {}: {} (the data to stage must exist and be readable by you; "
                              "fix the path in `data: stage:` or its permissions)",
                              path.string(), std::strerror(error_number)));
}

namespace {

ManifestEntry entry_of(const fs::path& path, std::string relative, const struct stat& info) {
  ManifestEntry entry;
  entry.relative = std::move(relative);
  entry.size = S_ISREG(info.st_mode) ? static_cast<std::uint64_t>(info.st_size) : 0;
  entry.mtime_ns = static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec;
  entry.mode = info.st_mode & 07777;
  if (S_ISREG(info.st_mode)) {
    entry.type = 'f';
  } else if (S_ISDIR(info.st_mode)) {
    entry.type = 'd';
  } else if (S_ISLNK(info.st_mode)) {
    entry.type = 'l';
    std::error_code error;
    entry.link_target = fs::read_symlink(path, error).string();
    if (error) throw_unreadable(path, error.value());
  } else {
    throw DataError(fmt::format("cannot stage {}: it is {}, not a file, a directory or a symbolic link (remove "
                                "it from the data, or stage the directory's files without it)",
                                path.string(), describe_file_kind(info.st_mode)));
  }
  return entry;
}

void walk(const fs::path& directory, const std::string& relative, Manifest& manifest) {
  std::error_code error;
  fs::directory_iterator it(directory, error);
  if (error) throw_unreadable(directory, error.value());
  for (; it != fs::directory_iterator(); it.increment(error)) {
    const fs::path path = it->path();
    const std::string name = relative.empty() ? path.filename().string() : relative + "/" + path.filename().string();
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0) throw_unreadable(path, errno);
    manifest.entries.push_back(entry_of(path, name, info));
    manifest.bytes += manifest.entries.back().size;
    if (S_ISDIR(info.st_mode)) walk(path, name, manifest);
  }
  if (error) throw_unreadable(directory, error.value());
}

bool ends_with_any(const std::string& name, std::initializer_list<const char*> suffixes) {
  return std::any_of(suffixes.begin(), suffixes.end(), [&](const char* suffix) { return name.ends_with(suffix); });
}

}  // namespace

const char* kind_name(SourceKind kind) {
  switch (kind) {
    case SourceKind::file: return "file";
    case SourceKind::directory: return "directory";
    case SourceKind::tar_archive: return "tar";
    case SourceKind::squashfs_image: return "squashfs";
  }
  return "file";
}

SourceKind kind_of(const fs::path& source, bool is_directory) {
  if (is_directory) return SourceKind::directory;
  const std::string name = source.filename().string();
  if (ends_with_any(name, {".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst", ".tzst"})) {
    return SourceKind::tar_archive;
  }
  if (ends_with_any(name, {".squashfs", ".sqfs"})) return SourceKind::squashfs_image;
  return SourceKind::file;
}

Manifest read_manifest(const fs::path& source) {
  if (!source.is_absolute()) {
    throw DataError(fmt::format("cannot stage {}: not an absolute path (the experiment's `data: stage:` paths are "
                                "resolved against its directory before staging)", source.string()));
  }
  struct stat info {};
  if (::stat(source.c_str(), &info) != 0) throw_unreadable(source, errno);
  Manifest manifest;
  manifest.source = source.lexically_normal();
  manifest.kind = kind_of(source, S_ISDIR(info.st_mode));
  manifest.entries.push_back(entry_of(source, "", info));
  manifest.bytes = manifest.entries.back().size;
  if (manifest.kind == SourceKind::directory) {
    if (::access(source.c_str(), R_OK | X_OK) != 0) throw_unreadable(source, errno);
    walk(source, "", manifest);
    std::sort(manifest.entries.begin(), manifest.entries.end(),
              [](const ManifestEntry& a, const ManifestEntry& b) { return a.relative < b.relative; });
  } else if (::access(source.c_str(), R_OK) != 0) {
    throw_unreadable(source, errno);
  }
  return manifest;
}

}  // namespace dlx::data
