// SPDX-License-Identifier: Apache-2.0
// The staging protocol (stage.hpp has it step by step).
#include "dlx/data/stage.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "cache_dir.hpp"
#include "cache_entries.hpp"
#include "copy_tree.hpp"
#include "dlx/common/byte_size.hpp"
#include "dlx/common/unique_fd.hpp"
#include "dlx/common/usable_cpus.hpp"
#include "dlx/data/node_local_dir.hpp"
#include "entry_lock.hpp"
#include "eviction.hpp"
#include "manifest.hpp"
#include "unpack.hpp"

namespace dlx::data {

namespace fs = std::filesystem;

namespace {

unsigned copy_threads(const StageRequest& request) {
  if (request.copy_threads != 0) return request.copy_threads;
  return std::clamp(usable_cpus(), 1u, 4u);
}

// What the entry will take on disk: a file's or directory's bytes, an archive's unpacked bytes
// (counted up to the cap, or the file system's size: more could never fit).
std::uint64_t bytes_needed(const CacheDir& cache, const Manifest& manifest, const CachePolicy& policy) {
  if (manifest.kind != SourceKind::tar_archive && manifest.kind != SourceKind::squashfs_image) return manifest.bytes;
  const std::uint64_t limit = counting_limit(cache, policy);
  if (const auto counted = unpacked_size(manifest.source, manifest.kind, limit)) return *counted;
  if (policy.max_bytes != 0) {
    throw DataError(fmt::format("cannot stage {}: unpacked, it holds more than the site's cap on your data cache on "
                                "a node, {} (limits: data: max_bytes in the site file; stage a smaller dataset)",
                                manifest.source.string(), format_byte_size(policy.max_bytes)));
  }
  throw DataError(fmt::format("cannot stage {}: unpacked, it holds more than the {} of the whole node-local file "
                              "system of {} (stage a smaller dataset, or name a larger directory with `data: to:`)",
                              manifest.source.string(), format_byte_size(limit), cache.path.string()));
}

// The staging directory this process made, open: a real directory of this user's, still at its
// name (after an unpack, nothing the archive held may have replaced it).
void check_staging(const CacheDir& cache, const std::string& name, int fd) {
  struct stat named {}, held {};
  if (::fstatat(cache.fd.get(), name.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0 || ::fstat(fd, &held) != 0 ||
      !S_ISDIR(named.st_mode) || named.st_dev != held.st_dev || named.st_ino != held.st_ino ||
      named.st_uid != ::geteuid()) {
    throw DataError(fmt::format("the staging directory {} was replaced while it was filled: refusing it (the archive "
                                "or another process of yours changed it; stage the data again)",
                                (cache.path / name).string()));
  }
}

// Steps 3 of the protocol, under the exclusive lock: the copy into a staging directory, made
// durable (one syncfs for every file and directory), renamed into place, then marked complete.
// Every step is relative to the cache directory's handle.
std::uint64_t copy_entry(const CacheDir& cache, const std::string& key, const Manifest& manifest,
                         const StageRequest& request, std::FILE* log) {
  remove_leftovers(cache, key, /*own_lock_held=*/true);
  const std::uint64_t needed = bytes_needed(cache, manifest, request.policy);
  make_room(cache, manifest.source, needed, request.policy, log);
  const std::string staging = staging_name(key);
  const fs::path shown = cache.path / staging;
  if (::mkdirat(cache.fd.get(), staging.c_str(), 0700) != 0) {
    throw DataError(fmt::format("cannot create {}: {} (is the node-local directory full or read-only?)",
                                shown.string(), std::strerror(errno)));
  }
  UniqueFd fd(::openat(cache.fd.get(), staging.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) throw DataError(fmt::format("cannot open {}: {}", shown.string(), std::strerror(errno)));
  std::uint64_t bytes = 0;
  if (manifest.kind == SourceKind::tar_archive || manifest.kind == SourceKind::squashfs_image) {
    unpack_archive(manifest.source, manifest.kind, fd.get(), shown, needed);
    bytes = tree_bytes(fd.get(), shown);
  } else {
    bytes = copy_source(manifest, fd.get(), shown, copy_threads(request));
  }
  check_staging(cache, staging, fd.get());
  // The source must not have changed during the copy: the entry would not match its key.
  if (manifest_key(read_manifest(manifest.source), request.checksum) != key) {
    throw DataError(fmt::format("{} changed while it was being staged (a file was written, added or removed): "
                                "stage data that no job is writing, or retry", manifest.source.string()));
  }
  if (::syncfs(fd.get()) != 0) {
    throw DataError(fmt::format("cannot sync the staged copy {}: {}", shown.string(), std::strerror(errno)));
  }
  if (::renameat(cache.fd.get(), staging.c_str(), cache.fd.get(), key.c_str()) != 0) {
    throw DataError(fmt::format("cannot rename {} to {}: {}", shown.string(), entry_dir(cache, key).string(),
                                std::strerror(errno)));
  }
  if (::fsync(cache.fd.get()) != 0) {
    throw DataError(fmt::format("cannot sync the data cache {}: {}", cache.path.string(), std::strerror(errno)));
  }
  write_marker(cache, key, manifest, bytes, request.checksum);
  return bytes;
}

// The entry's directory as the trainer will name it, proven to be the one in the cache's handle.
void prove_entry(const CacheDir& cache, const std::string& key) {
  UniqueFd fd(::openat(cache.fd.get(), key.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    throw DataError(fmt::format("cannot open {}: {}", entry_dir(cache, key).string(), std::strerror(errno)));
  }
  prove_same_directory(entry_dir(cache, key), fd.get());
}

StagedDataset stage_one(const CacheDir& cache, const fs::path& source, const StageRequest& request, std::FILE* log,
                        EntryLock& held) {
  const Manifest manifest = read_manifest(source);
  StagedDataset dataset;
  dataset.source = manifest.source;
  dataset.key = manifest_key(manifest, request.checksum);
  dataset.dir = entry_dir(cache, dataset.key);
  // 1. Shared: a complete entry is used as it is.
  EntryLock lock = lock_entry(cache, dataset.key, LockMode::shared);
  auto entry = read_entry(cache, dataset.key);
  if (!entry) {
    // 2. Exclusive (waits for another stager), then look again: it may have finished it.
    lock.release_shared_take_exclusive();
    entry = read_entry(cache, dataset.key);
    if (!entry) {
      if (log) {
        fmt::print(log, "data: staging {} ({}) into {}\n", manifest.source.string(), format_byte_size(manifest.bytes),
                   dataset.dir.string());
        std::fflush(log);
      }
      const auto started = std::chrono::steady_clock::now();
      try {
        dataset.bytes = copy_entry(cache, dataset.key, manifest, request, log);
      } catch (...) {
        remove_leftovers(cache, dataset.key, /*own_lock_held=*/true);
        throw;
      }
      dataset.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      if (log) {
        fmt::print(log, "data: staged {} in {:.2f} s ({:.0f} MB/s)\n", format_byte_size(dataset.bytes), dataset.seconds,
                   dataset.seconds > 0 ? static_cast<double>(dataset.bytes) / 1e6 / dataset.seconds : 0.0);
      }
    }
    // 4. Shared again, atomically: nobody can evict it between the copy and its use.
    lock.downgrade_to_shared();
  }
  if (entry) {
    dataset.reused = true;
    dataset.bytes = entry->bytes;
    touch_marker(cache, dataset.key);
    if (log) fmt::print(log, "data: reusing {} for {}\n", dataset.dir.string(), manifest.source.string());
  }
  prove_entry(cache, dataset.key);
  held = std::move(lock);
  return dataset;
}

}  // namespace

StagedData StagedData::stage(const StageRequest& request, std::FILE* log) {
  const CacheDir cache = open_user_cache(request.local_root);
  StagedData staged;
  for (const auto& source : request.sources) {
    EntryLock held;
    staged.datasets_.push_back(stage_one(cache, source, request, log, held));
    staged.locks_.push_back(held.release());
  }
  return staged;
}

}  // namespace dlx::data
