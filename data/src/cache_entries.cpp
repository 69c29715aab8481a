#include "cache_entries.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dlx/common/clock.hpp"
#include "dlx/common/durable_file.hpp"
#include "entry_lock.hpp"

namespace dlx::data {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxMarkerBytes = 64 << 10;
constexpr std::size_t kKeyLength = 64;

bool is_key(const std::string& name) {
  return name.size() == kKeyLength &&
         std::all_of(name.begin(), name.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string host_name() {
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) return "host";
  return host.data();
}

void remove_tree(const fs::path& path) {
  // A staged tree may hold read-only directories: open them up before removing.
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(path, error); !error && it != fs::recursive_directory_iterator();
       it.increment(error)) {
    if (it->is_directory(error) && !it->is_symlink(error)) ::chmod(it->path().c_str(), 0700);
  }
  ::chmod(path.c_str(), 0700);
  fs::remove_all(path, error);
  if (error) throw DataError(fmt::format("cannot remove {}: {}", path.string(), error.message()));
}

}  // namespace

fs::path entry_dir(const fs::path& cache, const std::string& key) { return cache / key; }
fs::path marker_path(const fs::path& cache, const std::string& key) { return cache / (key + ".json"); }
fs::path lock_path(const fs::path& cache, const std::string& key) { return cache / (key + ".lock"); }
fs::path staging_dir(const fs::path& cache, const std::string& key) {
  return cache / fmt::format(".staging-{}.{}.{}", key, host_name(), ::getpid());
}

void write_marker(const fs::path& cache, const std::string& key, const Manifest& manifest, std::uint64_t bytes,
                  bool checksum) {
  nlohmann::json marker = {{"format", 1},
                           {"key", key},
                           {"source", manifest.source.string()},
                           {"kind", kind_name(manifest.kind)},
                           {"checksum", checksum},
                           {"entries", manifest.entries.size()},
                           {"bytes", bytes},
                           {"created_unix", unix_seconds_now()}};
  write_file_durably(marker_path(cache, key), marker.dump(2) + "\n", 0600);
}

std::optional<CacheEntry> read_entry(const fs::path& cache, const std::string& key) {
  const fs::path marker = marker_path(cache, key);
  struct stat info {};
  if (::lstat(marker.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return std::nullopt;
  std::string text;
  try {
    text = read_small_file(marker, kMaxMarkerBytes);
  } catch (const Error&) {
    return std::nullopt;
  }
  const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || json.value("key", "") != key || !json.contains("bytes") || !json["bytes"].is_number()) {
    return std::nullopt;
  }
  struct stat dir {};
  if (::lstat(entry_dir(cache, key).c_str(), &dir) != 0 || !S_ISDIR(dir.st_mode)) return std::nullopt;
  CacheEntry entry;
  entry.key = key;
  entry.source = json.value("source", "");
  entry.dir = entry_dir(cache, key);
  entry.bytes = json["bytes"].get<std::uint64_t>();
  entry.created_unix = json.value("created_unix", std::int64_t{0});
  entry.last_used_unix = info.st_mtim.tv_sec;
  return entry;
}

void touch_marker(const fs::path& cache, const std::string& key) {
  ::utimensat(AT_FDCWD, marker_path(cache, key).c_str(), nullptr, 0);  // best effort: only the LRU order
}

std::vector<CacheEntry> complete_entries(const fs::path& cache) {
  std::vector<CacheEntry> entries;
  std::error_code error;
  for (auto it = fs::directory_iterator(cache, error); !error && it != fs::directory_iterator(); it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (!name.ends_with(".json") || !is_key(name.substr(0, name.size() - 5))) continue;
    if (auto entry = read_entry(cache, name.substr(0, kKeyLength))) {
      entry->in_use = EntryLock::held_by_anyone(lock_path(cache, entry->key));
      entries.push_back(std::move(*entry));
    }
  }
  if (error) throw DataError(fmt::format("cannot list the data cache {}: {}", cache.string(), error.message()));
  std::sort(entries.begin(), entries.end(),
            [](const CacheEntry& a, const CacheEntry& b) { return a.last_used_unix < b.last_used_unix; });
  return entries;
}

bool evict_entry(const fs::path& cache, const std::string& key) {
  EntryLock lock = EntryLock::try_exclusive(lock_path(cache, key));
  if (!lock) return false;
  std::error_code error;
  fs::remove(marker_path(cache, key), error);
  fsync_directory(cache);
  remove_tree(entry_dir(cache, key));
  lock.remove_file();
  return true;
}

std::size_t remove_leftovers(const fs::path& cache, const std::string& key, bool own_lock_held) {
  // Group what is there by key: staging directories and entry directories without a marker.
  std::set<std::string> keys;
  std::vector<std::pair<std::string, fs::path>> candidates;
  std::error_code error;
  for (auto it = fs::directory_iterator(cache, error); !error && it != fs::directory_iterator(); it.increment(error)) {
    const std::string name = it->path().filename().string();
    std::string owner;
    if (name.starts_with(".staging-") && name.size() > 9 + kKeyLength) {
      owner = name.substr(9, kKeyLength);
    } else if (is_key(name) && !read_entry(cache, name)) {
      owner = name;
    } else {
      continue;
    }
    if (!key.empty() && owner != key) continue;
    candidates.emplace_back(owner, it->path());
  }
  std::size_t removed = 0;
  for (const auto& [owner, path] : candidates) {
    // A stager holds its key's lock exclusively while it copies: a free lock means a dead stager.
    EntryLock lock;
    if (!(own_lock_held && owner == key)) {
      lock = EntryLock::try_exclusive(lock_path(cache, owner));
      struct stat info {};
      if (!lock && ::lstat(lock_path(cache, owner).c_str(), &info) == 0) continue;  // being copied now
      if (read_entry(cache, owner) && path.filename() == owner) continue;         // completed meanwhile
    }
    remove_tree(path);
    ++removed;
  }
  return removed;
}

std::uint64_t tree_bytes(const fs::path& directory) {
  std::uint64_t bytes = 0;
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(directory, error); !error && it != fs::recursive_directory_iterator();
       it.increment(error)) {
    struct stat info {};
    if (::lstat(it->path().c_str(), &info) == 0 && S_ISREG(info.st_mode)) bytes += static_cast<std::uint64_t>(info.st_size);
  }
  return bytes;
}

}  // namespace dlx::data
