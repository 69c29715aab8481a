// SPDX-License-Identifier: Apache-2.0
#include "eviction.hpp"

#include <sys/statvfs.h>

#include <algorithm>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "cache_dir.hpp"
#include "cache_entries.hpp"
#include "dlx/common/byte_size.hpp"

namespace dlx::data {

namespace fs = std::filesystem;

namespace {

struct Usage {
  std::uint64_t total = 0;
  std::uint64_t used = 0;
  std::uint64_t available = 0;  // to an unprivileged user
};

Usage file_system_usage(const CacheDir& cache) {
  struct statvfs info {};
  if (::fstatvfs(cache.fd.get(), &info) != 0) {
    throw DataError(fmt::format("cannot read the file system usage of {}: {}", cache.path.string(), std::strerror(errno)));
  }
  Usage usage;
  usage.total = static_cast<std::uint64_t>(info.f_blocks) * info.f_frsize;
  usage.used = static_cast<std::uint64_t>(info.f_blocks - info.f_bfree) * info.f_frsize;
  usage.available = static_cast<std::uint64_t>(info.f_bavail) * info.f_frsize;
  return usage;
}

double use_fraction(const Usage& usage, std::uint64_t adding) {
  return usage.total == 0 ? 0.0 : static_cast<double>(usage.used + adding) / static_cast<double>(usage.total);
}

std::uint64_t cache_bytes(const std::vector<CacheEntry>& entries) {
  std::uint64_t bytes = 0;
  for (const auto& entry : entries) bytes += entry.bytes;
  return bytes;
}

}  // namespace

std::uint64_t counting_limit(const CacheDir& cache, const CachePolicy& policy) {
  return policy.max_bytes != 0 ? policy.max_bytes : file_system_usage(cache).total;
}

void make_room(const CacheDir& cache, const fs::path& source, std::uint64_t new_bytes, const CachePolicy& policy,
               std::FILE* log) {
  if (policy.max_bytes != 0 && new_bytes > policy.max_bytes) {
    throw DataError(fmt::format("cannot stage {}: it needs {} but the site caps your data cache on a node at {} "
                                "(limits: data: max_bytes in the site file; stage a smaller dataset)",
                                source.string(), format_byte_size(new_bytes), format_byte_size(policy.max_bytes)));
  }
  auto entries = complete_entries(cache);
  std::uint64_t cached = cache_bytes(entries);
  const bool over_cap = policy.max_bytes != 0 && cached + new_bytes > policy.max_bytes;
  const bool over_high = use_fraction(file_system_usage(cache), new_bytes) > policy.high_watermark;
  if (over_cap || over_high) {
    for (const auto& entry : entries) {  // least recently used first
      const bool cap_ok = policy.max_bytes == 0 || cached + new_bytes <= policy.max_bytes;
      const bool low_ok = !over_high || use_fraction(file_system_usage(cache), new_bytes) <= policy.low_watermark;
      if (cap_ok && low_ok) break;
      if (entry.in_use || !evict_entry(cache, entry.key)) continue;
      cached -= entry.bytes;
      if (log) {
        fmt::print(log, "data: evicted {} ({}, {}) to make room\n", entry.dir.string(), entry.source.string(),
                   format_byte_size(entry.bytes));
      }
    }
  }
  if (policy.max_bytes != 0 && cached + new_bytes > policy.max_bytes) {
    throw DataError(fmt::format("cannot stage {} ({}): your data cache {} holds {} in entries other trials are "
                                "using, and with it would exceed the site cap of {} (limits: data: max_bytes in "
                                "the site file; wait for those trials, or stage less)",
                                source.string(), format_byte_size(new_bytes), cache.path.string(),
                                format_byte_size(cached), format_byte_size(policy.max_bytes)));
  }
  const Usage usage = file_system_usage(cache);
  if (usage.available < new_bytes) {
    throw DataError(fmt::format("cannot stage {} ({}): the node-local file system of {} has only {} free "
                                "(`dlx data gc` frees your unused entries; the site's local_dir= or `data: to:` "
                                "may name a larger directory)",
                                source.string(), format_byte_size(new_bytes), cache.path.string(),
                                format_byte_size(usage.available)));
  }
}

std::vector<CacheEntry> list_cache(const fs::path& local_root) {
  const auto cache = find_user_cache(local_root);
  if (!cache) return {};
  auto entries = complete_entries(*cache);
  std::reverse(entries.begin(), entries.end());  // most recently used first
  return entries;
}

GcResult collect_garbage(const fs::path& local_root, const GcRequest& request) {
  GcResult result;
  const auto found = find_user_cache(local_root);
  if (!found) return result;
  const CacheDir& cache = *found;
  result.leftovers_removed = remove_leftovers(cache, "", false);
  auto entries = complete_entries(cache);
  std::uint64_t cached = cache_bytes(entries);
  for (const auto& entry : entries) {  // least recently used first
    const bool wanted = request.all || (request.max_bytes && cached > *request.max_bytes);
    if (!wanted) break;
    if (entry.in_use || !evict_entry(cache, entry.key)) {
      ++result.kept_in_use;
      continue;
    }
    cached -= entry.bytes;
    result.removed.push_back(entry);
  }
  result.bytes_left = cached;
  return result;
}

}  // namespace dlx::data
