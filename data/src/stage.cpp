// The staging protocol (stage.hpp has it step by step).
#include "dlx/data/stage.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "cache_dir.hpp"
#include "cache_entries.hpp"
#include "copy_tree.hpp"
#include "dlx/common/byte_size.hpp"
#include "dlx/common/durable_file.hpp"
#include "entry_lock.hpp"
#include "eviction.hpp"
#include "manifest.hpp"
#include "unpack.hpp"

namespace dlx::data {

namespace fs = std::filesystem;

namespace {

unsigned copy_threads(const StageRequest& request) {
  if (request.copy_threads != 0) return request.copy_threads;
  return std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
}

void sync_file_system(const fs::path& directory) {
  UniqueFd fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd || ::syncfs(fd.get()) != 0) {
    throw DataError(fmt::format("cannot sync the staged copy {}: {}", directory.string(), std::strerror(errno)));
  }
}

// Steps 3 of the protocol, under the exclusive lock: the copy into a staging directory, made
// durable (one syncfs for every file and directory), renamed into place, then marked complete.
std::uint64_t copy_entry(const fs::path& cache, const std::string& key, const Manifest& manifest,
                         const StageRequest& request, std::FILE* log) {
  remove_leftovers(cache, key, /*own_lock_held=*/true);
  make_room(cache, manifest.source, manifest.bytes, request.policy, log);
  const fs::path staging = staging_dir(cache, key);
  if (::mkdir(staging.c_str(), 0700) != 0) {
    throw DataError(fmt::format("cannot create {}: {} (is the node-local directory full or read-only?)",
                                staging.string(), std::strerror(errno)));
  }
  std::uint64_t bytes = 0;
  if (manifest.kind == SourceKind::tar_archive || manifest.kind == SourceKind::squashfs_image) {
    unpack_archive(manifest.source, manifest.kind, staging);
    bytes = tree_bytes(staging);
  } else {
    bytes = copy_source(manifest, staging, copy_threads(request));
  }
  // The source must not have changed during the copy: the entry would not match its key.
  if (manifest_key(read_manifest(manifest.source), request.checksum) != key) {
    throw DataError(fmt::format("{} changed while it was being staged (a file was written, added or removed): "
                                "stage data that no job is writing, or retry", manifest.source.string()));
  }
  sync_file_system(staging);
  const fs::path final_dir = entry_dir(cache, key);
  if (::rename(staging.c_str(), final_dir.c_str()) != 0) {
    throw DataError(fmt::format("cannot rename {} to {}: {}", staging.string(), final_dir.string(), std::strerror(errno)));
  }
  fsync_directory(cache);
  write_marker(cache, key, manifest, bytes, request.checksum);
  return bytes;
}

StagedDataset stage_one(const fs::path& cache, const fs::path& source, const StageRequest& request, std::FILE* log,
                        EntryLock& held) {
  const Manifest manifest = read_manifest(source);
  StagedDataset dataset;
  dataset.source = manifest.source;
  dataset.key = manifest_key(manifest, request.checksum);
  dataset.dir = entry_dir(cache, dataset.key);
  // 1. Shared: a complete entry is used as it is.
  EntryLock lock = EntryLock::acquire(lock_path(cache, dataset.key), LockMode::shared);
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
  held = std::move(lock);
  return dataset;
}

}  // namespace

StagedData StagedData::stage(const StageRequest& request, std::FILE* log) {
  const fs::path cache = open_user_cache(request.local_root, /*create=*/true);
  StagedData staged;
  for (const auto& source : request.sources) {
    EntryLock held;
    staged.datasets_.push_back(stage_one(cache, source, request, log, held));
    staged.locks_.push_back(held.release());
  }
  return staged;
}

}  // namespace dlx::data
