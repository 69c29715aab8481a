// SPDX-License-Identifier: Apache-2.0
#pragma once
// This user's cache directory on a node: <local_root>/dlx-<uid>/data, opened through the one
// function that checks the node-local directory (dlx/data/node_local_dir.hpp), 0700 like it. Every
// step of staging, listing and eviction then works relative to the handle held here.
#include <filesystem>
#include <optional>

#include "dlx/common/unique_fd.hpp"

namespace dlx::data {

struct CacheDir {
  UniqueFd fd;                 // <local_root>/dlx-<uid>/data, open O_RDONLY | O_DIRECTORY, checked
  std::filesystem::path path;  // the same as named: for messages and the trainer's DLX_DATA_DIR
};

// Creates (when missing) and checks <local_root>/dlx-<uid> and its data/. Throws DataError naming
// the directory, what is wrong with it and what to do.
CacheDir open_user_cache(const std::filesystem::path& local_root);

// The same without creating anything: nullopt when this user has no cache under `local_root`.
std::optional<CacheDir> find_user_cache(const std::filesystem::path& local_root);

}  // namespace dlx::data
