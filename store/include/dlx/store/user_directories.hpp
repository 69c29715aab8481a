// SPDX-License-Identifier: Apache-2.0
#pragma once
// Users' directories in the storage root: <storage_root>/<user>, each its user's own (0750 or
// 0700, owned by the user, not a symbolic link). The recommended layout (docs/security.md) has an
// administrator make them (`dlx storage add-user`) in a root-owned 0755 storage root, so that no
// user can create a directory in another's name; in a 1777 root users make their own and dlx
// refuses one that someone else made first. These functions are what the administrator's tools
// (`dlx storage`, `dlx doctor`) do; the plugin never runs them.
#include <filesystem>
#include <string>
#include <vector>

namespace dlx::store {

// An entry of the storage root named after a user that is not that user's own directory.
struct UserDirectoryProblem {
  std::string user;
  std::filesystem::path path;
  std::string problem;  // "owned by mallory", "a symbolic link", "writable by its group (mode 0770)"
};

// Every entry of `storage_root` whose name is a user's (passwd) and which is not that user's own
// directory, in name order. Read-only; entries named after no user are not judged.
std::vector<UserDirectoryProblem> check_user_directories(const std::filesystem::path& storage_root);

// Makes <storage_root>/<user> owned by the user and their primary group, mode 0750 (root only).
// Returns false when it already is the user's own directory. Throws Error (unknown user, or an
// entry in the way that is not theirs: it is reported, never changed or removed) or SystemError.
bool add_user_directory(const std::filesystem::path& storage_root, const std::string& user);

}  // namespace dlx::store
