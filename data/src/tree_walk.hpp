// SPDX-License-Identifier: Apache-2.0
#pragma once
// A depth-first walk below an open directory that never follows a link and holds two descriptors
// whatever the depth (an archive may nest directories thousands deep: one descriptor per level
// would run out). Each directory is opened with openat(O_NOFOLLOW | O_DIRECTORY) from its parent;
// the walk climbs back with openat(child, "..") and checks that it arrived where it came from
// (device and inode), so a tree changed meanwhile ends the walk with an error, not elsewhere.
// Meant for the user's own private trees (a cache entry, a code copy), which nobody else can change.
#include <sys/stat.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace dlx::data {

struct TreeVisitor {
  // A directory has just been opened (`fd`), before its entries are listed. May be empty.
  std::function<void(int fd, const std::filesystem::path& shown)> enter;
  // Every entry that is not a directory (`status` from fstatat without following links).
  std::function<void(int parent, const std::string& name, const struct stat& status,
                     const std::filesystem::path& shown)> entry;
  // A directory whose entries have all been visited, given by its parent and name. May be empty.
  std::function<void(int parent, const std::string& name, const std::filesystem::path& shown)> leave;
  // A directory that cannot be opened (EACCES, as a 0000 directory from an archive is): true when
  // `open_up` may retry after making it 0700; false skips it (then neither enter nor leave).
  bool open_up = false;
};

// The names in the open directory `fd` (without "." and ".."). `shown` names it in messages.
std::vector<std::string> list_names(int fd, const std::filesystem::path& shown);

// Walks everything below `top` (not `top` itself, which the caller opened). `shown` is top's path
// for messages. Throws DataError.
void walk_tree(int top, const std::filesystem::path& shown, const TreeVisitor& visitor);

}  // namespace dlx::data
