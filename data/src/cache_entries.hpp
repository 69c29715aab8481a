// SPDX-License-Identifier: Apache-2.0
#pragma once
// The entries of one user's cache directory (docs/file-format.md, "Node-local data cache"):
// data/<key>/ the dataset, data/<key>.json its completion marker (mtime = last use),
// data/<key>.lock its lock, data/.staging-<key>.<host>.<pid>/ a copy in progress. Every name is
// reached relative to the cache directory's handle (cache_dir.hpp).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cache_dir.hpp"
#include "dlx/data/stage.hpp"
#include "entry_lock.hpp"
#include "manifest.hpp"

namespace dlx::data {

std::string marker_name(const std::string& key);
std::string lock_name(const std::string& key);
std::string staging_name(const std::string& key);  // this process's

// The entry's directory as a path: what the trainer and the messages get.
std::filesystem::path entry_dir(const CacheDir& cache, const std::string& key);

// The entry's lock (entry_lock.hpp), blocking until held in `mode`.
EntryLock lock_entry(const CacheDir& cache, const std::string& key, LockMode mode);

// Written (temporary + fsync + rename) after the entry's directory is in place.
void write_marker(const CacheDir& cache, const std::string& key, const Manifest& manifest, std::uint64_t bytes,
                  bool checksum);

// The complete entry `key`: its marker parses, names the key, and its directory exists.
std::optional<CacheEntry> read_entry(const CacheDir& cache, const std::string& key);

// Marks a use: the marker's mtime is the LRU order.
void touch_marker(const CacheDir& cache, const std::string& key);

// Every complete entry, least recently used first; `in_use` filled.
std::vector<CacheEntry> complete_entries(const CacheDir& cache);

// Removes the entry if nobody holds it (exclusive lock without waiting): marker first (so a crash
// meanwhile leaves a leftover, never a damaged complete entry), then the data, then the lock
// file. False when it is held.
bool evict_entry(const CacheDir& cache, const std::string& key);

// Removes the unfinished copies and marker-less entry directories of `key` (every key when
// empty) whose lock nobody holds. The caller may hold `key`'s lock itself (`own_lock_held`).
std::size_t remove_leftovers(const CacheDir& cache, const std::string& key, bool own_lock_held);

// Regular files' bytes below the open directory `directory` (`shown` names it), not following links.
std::uint64_t tree_bytes(int directory, const std::filesystem::path& shown);

}  // namespace dlx::data
