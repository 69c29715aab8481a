// SPDX-License-Identifier: Apache-2.0
#include "cache_dir.hpp"

#include "dlx/data/node_local_dir.hpp"
#include "dlx/data/stage.hpp"

namespace dlx::data {

namespace fs = std::filesystem;

namespace {

std::optional<CacheDir> open_cache(const fs::path& local_root, bool create) {
  auto user_dir = open_node_local_dir(local_root, create, NodeLocalUse::data_cache);
  if (!user_dir) return std::nullopt;
  CacheDir cache;
  cache.path = user_dir->path / "data";
  cache.fd = open_private_directory_at(user_dir->fd.get(), "data", create, cache.path, NodeLocalUse::data_cache);
  if (!cache.fd) return std::nullopt;
  return cache;
}

}  // namespace

CacheDir open_user_cache(const fs::path& local_root) { return std::move(*open_cache(local_root, /*create=*/true)); }

std::optional<CacheDir> find_user_cache(const fs::path& local_root) { return open_cache(local_root, /*create=*/false); }

}  // namespace dlx::data
