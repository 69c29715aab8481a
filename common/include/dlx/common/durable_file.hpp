// SPDX-License-Identifier: Apache-2.0
#pragma once
// Crash-safe file replacement: write to a temporary name in the same directory, fsync it, rename
// it over the final name, fsync the directory. A reader (on this node or another, over NFS or
// Lustre) sees either the old file or the new one, never a partial one; after a kill -9 at any
// instant the final name still holds the last complete version. Temporary names start with
// ".tmp." so that directory scanners (latest-checkpoint discovery, `dlx status`) skip them.
#include <filesystem>
#include <string>
#include <string_view>
#include <sys/types.h>

namespace dlx {

// A unique temporary path beside `final_path` (same directory, so the rename is atomic).
std::filesystem::path temporary_path_for(const std::filesystem::path& final_path);

// True for names produced by temporary_path_for (to be skipped, or cleaned up).
bool is_temporary_name(std::string_view file_name);

// fsync an existing file by path (e.g. one a library such as HDF5 wrote and closed).
void fsync_file(const std::filesystem::path& path);

// fsync a directory so that a rename or create inside it is durable.
void fsync_directory(const std::filesystem::path& directory);

// fsync `temporary`, rename it to `final_path`, fsync the directory. Throws SystemError.
void publish_file(const std::filesystem::path& temporary, const std::filesystem::path& final_path);

// Write `contents` durably to `final_path` with exactly the permission bits `mode`, whatever the
// umask (temp + fsync + rename).
void write_file_durably(const std::filesystem::path& final_path, std::string_view contents,
                        mode_t mode = 0640);

// Read a whole (small) regular file; throws SystemError naming the path (also for a FIFO, a
// device or a directory, refused without blocking), Error when it is over `max_bytes`.
std::string read_small_file(const std::filesystem::path& path, std::size_t max_bytes);

}  // namespace dlx
