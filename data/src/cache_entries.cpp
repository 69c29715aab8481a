// SPDX-License-Identifier: Apache-2.0
#include "cache_entries.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dlx/common/clock.hpp"
#include "dlx/common/error.hpp"
#include "dlx/common/host_name.hpp"
#include "dlx/common/trusted_path.hpp"
#include "dlx/data/node_local_dir.hpp"
#include "tree_walk.hpp"

namespace dlx::data {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxMarkerBytes = 64 << 10;
constexpr std::size_t kKeyLength = 64;

bool is_key(const std::string& name) {
  return name.size() == kKeyLength &&
         std::all_of(name.begin(), name.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

void fsync_cache(const CacheDir& cache) {
  if (::fsync(cache.fd.get()) != 0) {
    throw DataError(fmt::format("cannot sync the data cache {}: {}", cache.path.string(), std::strerror(errno)));
  }
}

// `contents` as the file `name` of the cache, durably: a temporary name (".tmp.", as
// durable_file.hpp names them), fsync, rename over `name`, fsync of the directory.
void write_durably_at(const CacheDir& cache, const std::string& name, std::string_view contents) {
  const std::string temporary = fmt::format(".tmp.{}.{}", name, ::getpid());
  const fs::path shown = cache.path / name;
  UniqueFd out(::openat(cache.fd.get(), temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                        0600));
  if (!out) throw DataError(fmt::format("cannot write {}: {}", shown.string(), std::strerror(errno)));
  while (!contents.empty()) {
    const ssize_t wrote = ::write(out.get(), contents.data(), contents.size());
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote < 0) {
      const int error = errno;
      ::unlinkat(cache.fd.get(), temporary.c_str(), 0);
      throw DataError(fmt::format("cannot write {}: {}", shown.string(), std::strerror(error)));
    }
    contents.remove_prefix(static_cast<std::size_t>(wrote));
  }
  if (::fsync(out.get()) != 0 || ::renameat(cache.fd.get(), temporary.c_str(), cache.fd.get(), name.c_str()) != 0) {
    const int error = errno;
    ::unlinkat(cache.fd.get(), temporary.c_str(), 0);
    throw DataError(fmt::format("cannot write {}: {}", shown.string(), std::strerror(error)));
  }
  fsync_cache(cache);
}

std::optional<nlohmann::json> read_marker(const CacheDir& cache, const std::string& key, struct stat& status) {
  const std::string name = marker_name(key);
  UniqueFd fd(::openat(cache.fd.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd || ::fstat(fd.get(), &status) != 0 || !S_ISREG(status.st_mode)) return std::nullopt;
  std::string text;
  try {
    text = read_open_file(fd.get(), kMaxMarkerBytes, cache.path / name);
  } catch (const Error&) {
    return std::nullopt;
  }
  auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || json.value("key", "") != key || !json.contains("bytes") || !json["bytes"].is_number()) {
    return std::nullopt;
  }
  return json;
}

}  // namespace

std::string marker_name(const std::string& key) { return key + ".json"; }
std::string lock_name(const std::string& key) { return key + ".lock"; }
std::string staging_name(const std::string& key) { return fmt::format(".staging-{}.{}.{}", key, host_name(), ::getpid()); }

fs::path entry_dir(const CacheDir& cache, const std::string& key) { return cache.path / key; }

EntryLock lock_entry(const CacheDir& cache, const std::string& key, LockMode mode) {
  return EntryLock::acquire(cache.fd.get(), lock_name(key), cache.path / lock_name(key), mode);
}

void write_marker(const CacheDir& cache, const std::string& key, const Manifest& manifest, std::uint64_t bytes,
                  bool checksum) {
  nlohmann::json marker = {{"format", 1},
                           {"key", key},
                           {"source", manifest.source.string()},
                           {"kind", kind_name(manifest.kind)},
                           {"checksum", checksum},
                           {"entries", manifest.entries.size()},
                           {"bytes", bytes},
                           {"created_unix", unix_seconds_now()}};
  write_durably_at(cache, marker_name(key), marker.dump(2) + "\n");
}

std::optional<CacheEntry> read_entry(const CacheDir& cache, const std::string& key) {
  struct stat marker {};
  const auto json = read_marker(cache, key, marker);
  if (!json) return std::nullopt;
  struct stat dir {};
  if (::fstatat(cache.fd.get(), key.c_str(), &dir, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(dir.st_mode)) {
    return std::nullopt;
  }
  CacheEntry entry;
  entry.key = key;
  entry.source = json->value("source", "");
  entry.dir = entry_dir(cache, key);
  entry.bytes = (*json)["bytes"].get<std::uint64_t>();
  entry.created_unix = json->value("created_unix", std::int64_t{0});
  entry.last_used_unix = marker.st_mtim.tv_sec;
  return entry;
}

void touch_marker(const CacheDir& cache, const std::string& key) {
  // Best effort: only the LRU order.
  ::utimensat(cache.fd.get(), marker_name(key).c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
}

std::vector<CacheEntry> complete_entries(const CacheDir& cache) {
  std::vector<CacheEntry> entries;
  for (const auto& name : list_names(cache.fd.get(), cache.path)) {
    if (!name.ends_with(".json") || !is_key(name.substr(0, name.size() - 5))) continue;
    if (auto entry = read_entry(cache, name.substr(0, kKeyLength))) {
      entry->in_use = EntryLock::held_by_anyone(cache.fd.get(), lock_name(entry->key), cache.path / lock_name(entry->key));
      entries.push_back(std::move(*entry));
    }
  }
  std::sort(entries.begin(), entries.end(),
            [](const CacheEntry& a, const CacheEntry& b) { return a.last_used_unix < b.last_used_unix; });
  return entries;
}

bool evict_entry(const CacheDir& cache, const std::string& key) {
  EntryLock lock = EntryLock::try_exclusive(cache.fd.get(), lock_name(key), cache.path / lock_name(key));
  if (!lock) return false;
  ::unlinkat(cache.fd.get(), marker_name(key).c_str(), 0);
  fsync_cache(cache);
  remove_tree_at(cache.fd.get(), key, entry_dir(cache, key));
  lock.remove_file();
  return true;
}

std::size_t remove_leftovers(const CacheDir& cache, const std::string& key, bool own_lock_held) {
  // Group what is there by key: staging directories and entry directories without a marker.
  std::vector<std::pair<std::string, std::string>> candidates;  // (key, name)
  for (const auto& name : list_names(cache.fd.get(), cache.path)) {
    std::string owner;
    if (name.starts_with(".staging-") && name.size() > 9 + kKeyLength) {
      owner = name.substr(9, kKeyLength);
    } else if (is_key(name) && !read_entry(cache, name)) {
      owner = name;
    } else {
      continue;
    }
    if (!key.empty() && owner != key) continue;
    candidates.emplace_back(owner, name);
  }
  std::size_t removed = 0;
  for (const auto& [owner, name] : candidates) {
    // A stager holds its key's lock exclusively while it copies: a free lock means a dead stager.
    EntryLock lock;
    if (!(own_lock_held && owner == key)) {
      lock = EntryLock::try_exclusive(cache.fd.get(), lock_name(owner), cache.path / lock_name(owner));
      struct stat info {};
      if (!lock && ::fstatat(cache.fd.get(), lock_name(owner).c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0) {
        continue;  // being copied now
      }
      if (read_entry(cache, owner) && name == owner) continue;  // completed meanwhile
    }
    remove_tree_at(cache.fd.get(), name, cache.path / name);
    ++removed;
  }
  return removed;
}

std::uint64_t tree_bytes(int directory, const fs::path& shown) {
  std::uint64_t bytes = 0;
  TreeVisitor counter;
  counter.entry = [&bytes](int, const std::string&, const struct stat& status, const fs::path&) {
    if (S_ISREG(status.st_mode)) bytes += static_cast<std::uint64_t>(status.st_size);
  };
  walk_tree(directory, shown, counter);
  return bytes;
}

}  // namespace dlx::data
