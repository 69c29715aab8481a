// SPDX-License-Identifier: Apache-2.0
#pragma once
// Data staging: a node-local, per-user cache of the datasets trials read (issue 22, item 2).
//
// The first trial on a node copies each source (a file, a directory, or an archive that is
// unpacked) into <local_root>/dlx-<uid>/data/<key>/; later trials, of this job or a later one,
// find the entry complete and reuse it. The key is a SHA-256 of the source's manifest (every
// entry's relative path, type, size, mtime and mode; with `checksum`, its contents instead of the
// mtimes), so a changed source gets a new entry and an unchanged one is never copied twice.
//
// The protocol on one entry (Linux open-file-description locks on data/<key>.lock, which work
// between threads and processes alike and are released when the last descriptor closes):
//   1. take a shared lock; if data/<key>.json (the completion marker) is there and valid, use it;
//   2. else drop it, take the exclusive lock (blocking: another process may be copying), look
//      again (it may have finished meanwhile);
//   3. remove any leftover .staging-<key>.* (a copy killed midway), evict least recently used
//      entries nobody holds if the new one would not fit, copy into .staging-<key>.<host>.<pid>,
//      fsync it, rename it to <key>, then write the marker (temporary + fsync + rename);
//   4. convert the exclusive lock into a shared one (atomic with OFD locks: nobody can evict the
//      entry between the copy and its use) and hold it until the StagedData is destroyed.
// A copy killed at any point leaves no marker, so it is never used; the next stager redoes it.
// Caches are per user (0700, the user's own): users never see, share or block each other's.
// The cache directory is opened once through node_local_dir.hpp (its base checked by the storage
// root's rule) and every step above works relative to that handle; an archive's size is its
// unpacked size (unpack.hpp), counted before step 3 evicts for it.
// docs/file-format.md ("Node-local data cache") describes the layout.
#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dlx/common/error.hpp"
#include "dlx/common/file_lock.hpp"

namespace dlx::data {

// Every failure of staging, listing or collecting: the message names the path and what to do.
class DataError : public Error {
 public:
  using Error::Error;
};

struct CachePolicy {
  std::uint64_t max_bytes = 0;   // the site cap for one user's cache on one node; 0 = none
  double high_watermark = 0.90;  // file-system use fraction that triggers eviction before a copy
  double low_watermark = 0.80;   // eviction goes down to this
};

struct StageRequest {
  std::vector<std::filesystem::path> sources;  // absolute: files, directories, archives (.tar, .tar.gz,
                                               // .tgz, .tar.zst..., .squashfs/.sqfs) which are unpacked
  std::filesystem::path local_root;            // the node-local base dir (already %n/%u-expanded)
  bool checksum = false;                       // key by content checksum instead of size+mtime manifest
  CachePolicy policy;
  unsigned copy_threads = 0;                   // 0: a few (min(4, hardware threads))
};

struct StagedDataset {
  std::filesystem::path source;
  std::filesystem::path dir;  // what the trial reads (DLX_DATA_DIR / an entry of DLX_DATA_DIRS)
  std::string key;            // content key (hex)
  std::uint64_t bytes = 0;
  bool reused = false;        // true: found complete in the cache, nothing copied
  double seconds = 0;         // time spent copying (0 when reused)
};

// Stages every source into <local_root>/dlx-<uid>/data/ (0700, this user's own; refused, with why
// and the fix, when <local_root> or a directory above it is another user's: node_local_dir.hpp), one cache entry
// per source, reusing complete entries; blocks while another process (another rank, trial or job
// of this user on this node) stages the same entry; holds a shared lock on each entry until
// destroyed so that eviction (by another trial or `dlx data gc`) never removes data in use.
// Throws DataError on failure.
class StagedData {
 public:
  static StagedData stage(const StageRequest& request, std::FILE* log /* progress lines, may be null */);
  const std::vector<StagedDataset>& datasets() const { return datasets_; }

  StagedData() = default;
  StagedData(StagedData&&) noexcept = default;
  StagedData& operator=(StagedData&&) noexcept = default;
  StagedData(const StagedData&) = delete;
  StagedData& operator=(const StagedData&) = delete;
  ~StagedData() = default;  // closing the lock descriptors releases the shared locks

 private:
  std::vector<StagedDataset> datasets_;
  std::vector<FileLock> locks_;  // one per dataset: its data/<key>.lock, held shared
};

// The whole manifest's size for sbatch's validation (walks the sources as the user; throws
// DataError naming the unreadable path). An archive counts with its own size here
// (sbatch reads no archive); on the node, with its unpacked size.
std::uint64_t source_bytes(const std::vector<std::filesystem::path>& sources);

// ---- Where the cache lives ----------------------------------------------------------------

// What decides the node-local base directory when the experiment names none (`data: to:`).
struct LocalRootContext {
  std::string local_dir_option;  // the plugstack's local_dir= (may hold %n and %u); empty: unset
  std::string slurm_tmpfs;       // Slurm's TmpFS (may hold %n); empty: unknown or not under Slurm
  std::string node_name;         // replaces %n
  std::string user_name;         // replaces %u
  std::string tmpdir;            // $TMPDIR (used only when absolute)
};

// The default local_root: local_dir= (expanded), else Slurm's TmpFS (expanded), else $TMPDIR,
// else /tmp. Throws DataError when a pattern is not absolute or holds an unknown %-escape.
std::filesystem::path resolve_local_root(const LocalRootContext& context);

// `pattern` with %n (node name), %u (user name) and %% expanded; `what` names it in messages.
std::filesystem::path expand_local_dir(const std::string& pattern, const std::string& node_name,
                                       const std::string& user_name, const std::string& what);

// The context of a process on `node_name` that sees the variables `variable` gives (the plugin's
// DLX_SITE_LOCAL_DIR and DLX_SLURM_TMPFS, and TMPDIR), for its effective uid: %u is the uid's
// account_name (dlx/common/accounts.hpp: the digits for a uid without a passwd entry). dlx-launch
// and `dlx data` both build it here, so that they expand every pattern alike.
LocalRootContext local_root_context(const std::function<std::optional<std::string>(const char*)>& variable,
                                    std::string node_name);

// local_root_context over this process's environment, on the node SLURMD_NODENAME names, else
// this host. `dlx data` uses it when given no --dir.
LocalRootContext local_root_context_from_environment();

// <local_root>/dlx-<uid>/data for the effective uid, for messages (not created, not checked).
std::filesystem::path user_cache_dir(const std::filesystem::path& local_root);

// ---- Looking at and cleaning a cache (`dlx data ls|gc`) -------------------------------------

struct CacheEntry {
  std::string key;
  std::filesystem::path source;  // as recorded in the marker
  std::filesystem::path dir;
  std::uint64_t bytes = 0;
  std::int64_t created_unix = 0;
  std::int64_t last_used_unix = 0;  // the marker's mtime
  bool in_use = false;              // some process holds its lock now
};

// The complete entries of this user's cache under `local_root`, most recently used first; empty
// when there is no cache yet. Throws DataError for a cache directory that is not the user's own,
// or a `local_root` another user could change (node_local_dir.hpp).
std::vector<CacheEntry> list_cache(const std::filesystem::path& local_root);

struct GcRequest {
  bool all = false;                            // remove every entry nobody holds
  std::optional<std::uint64_t> max_bytes;      // else: evict LRU entries until the cache is <= this
};

struct GcResult {
  std::vector<CacheEntry> removed;
  std::size_t kept_in_use = 0;      // entries that would have gone but are held
  std::size_t leftovers_removed = 0;  // unfinished copies and markerless entries cleaned up
  std::uint64_t bytes_left = 0;     // the cache's size afterwards
};

// Removes unfinished copies (whose stager is gone), then entries by the request, least recently
// used first, never one that a process holds.
GcResult collect_garbage(const std::filesystem::path& local_root, const GcRequest& request);

}  // namespace dlx::data
