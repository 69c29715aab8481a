#pragma once
// This user's cache directory on a node: <local_root>/dlx-<uid>/data, both levels made 0700 and
// accepted only as the user's own real directories that nobody else can open: another user
// could otherwise plant a link (and have the user copy data into their directory), swap an entry
// under a trial, or read the user's data.
#include <filesystem>

namespace dlx::data {

// Creates (when `create`) and checks <local_root>/dlx-<uid> and its data/; returns data/. Throws
// DataError naming the directory, what is wrong with it and what to do. `local_root` must exist.
std::filesystem::path open_user_cache(const std::filesystem::path& local_root, bool create);

}  // namespace dlx::data
