#include "unpack.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "dlx/common/bounded_command.hpp"
#include "dlx/data/stage.hpp"

namespace dlx::data {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void unpack_failed(const fs::path& archive, const std::string& why) {
  throw DataError(fmt::format("cannot unpack {}: {} (check the archive with `tar -tf` or `unsquashfs -l`, or "
                              "stage its unpacked directory instead)", archive.string(), why));
}

// A name from the archive that stays inside the destination: relative, without "..".
bool stays_inside(const char* name) {
  if (name == nullptr || *name == '\0') return true;
  const fs::path path(name);
  if (path.is_absolute()) return false;
  for (const auto& part : path) {
    if (part == "..") return false;
  }
  return true;
}

void unpack_tar(const fs::path& archive, const fs::path& destination) {
  std::unique_ptr<struct archive, decltype(&archive_read_free)> in(archive_read_new(), archive_read_free);
  std::unique_ptr<struct archive, decltype(&archive_write_free)> out(archive_write_disk_new(), archive_write_free);
  archive_read_support_format_tar(in.get());
  archive_read_support_format_gnutar(in.get());
  archive_read_support_filter_all(in.get());
  // Modes and times kept; never through a link (SECURE_SYMLINKS), never "..", no owners.
  archive_write_disk_set_options(out.get(), ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME |
                                                ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT);
  archive_write_disk_set_standard_lookup(out.get());
  if (archive_read_open_filename(in.get(), archive.c_str(), std::size_t{1} << 20) != ARCHIVE_OK) {
    unpack_failed(archive, archive_error_string(in.get()));
  }
  // Absolute names below the real path of the destination (libarchive refuses links on the way).
  const fs::path base = fs::canonical(destination);
  struct archive_entry* entry = nullptr;
  for (;;) {
    const int got = archive_read_next_header(in.get(), &entry);
    if (got == ARCHIVE_EOF) break;
    if (got != ARCHIVE_OK) unpack_failed(archive, archive_error_string(in.get()));
    const char* name = archive_entry_pathname(entry);
    const char* hardlink = archive_entry_hardlink(entry);
    if (!stays_inside(name) || !stays_inside(hardlink)) {
      unpack_failed(archive, fmt::format("the entry '{}' would land outside the unpacked directory",
                                         hardlink && !stays_inside(hardlink) ? hardlink : name));
    }
    archive_entry_set_pathname(entry, (base / name).c_str());
    if (hardlink) archive_entry_set_hardlink(entry, (base / hardlink).c_str());
    if (archive_write_header(out.get(), entry) != ARCHIVE_OK) unpack_failed(archive, archive_error_string(out.get()));
    const void* block = nullptr;
    std::size_t size = 0;
    la_int64_t offset = 0;
    for (;;) {
      const int read = archive_read_data_block(in.get(), &block, &size, &offset);
      if (read == ARCHIVE_EOF) break;
      if (read != ARCHIVE_OK) unpack_failed(archive, archive_error_string(in.get()));
      if (archive_write_data_block(out.get(), block, size, offset) != ARCHIVE_OK) {
        unpack_failed(archive, archive_error_string(out.get()));
      }
    }
    if (archive_write_finish_entry(out.get()) != ARCHIVE_OK) unpack_failed(archive, archive_error_string(out.get()));
  }
  if (archive_write_close(out.get()) != ARCHIVE_OK) unpack_failed(archive, archive_error_string(out.get()));
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream directories(path ? path : "/usr/bin:/bin");
  for (std::string directory; std::getline(directories, directory, ':');) {
    if (!directory.empty() && ::access((fs::path(directory) / program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

void unpack_squashfs(const fs::path& image, const fs::path& destination) {
  if (!on_path("unsquashfs")) {
    unpack_failed(image, "unsquashfs is not installed on this node (the site installs Debian's squashfs-tools; "
                         "or stage a tar archive or a directory instead)");
  }
  CommandLimits limits;
  limits.timeout = std::chrono::hours(2);
  limits.max_output = std::size_t{1} << 20;
  CommandResult result;
  try {
    // -f: into the existing staging directory; no xattrs (a user cannot set most of them).
    result = run_bounded({"unsquashfs", "-no-progress", "-no-xattrs", "-f", "-d", destination.string(),
                          image.string()}, limits);
  } catch (const CommandError& e) {
    unpack_failed(image, e.what());
  }
  if (result.exit_code != 0) {
    unpack_failed(image, fmt::format("unsquashfs exited with status {}: {}", result.exit_code, result.err));
  }
}

}  // namespace

void unpack_archive(const fs::path& archive, SourceKind kind, const fs::path& destination) {
  if (kind == SourceKind::squashfs_image) {
    unpack_squashfs(archive, destination);
  } else {
    unpack_tar(archive, destination);
  }
}

}  // namespace dlx::data
