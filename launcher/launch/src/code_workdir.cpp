// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/code_workdir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "dlx/common/byte_size.hpp"
#include "dlx/common/error.hpp"
#include "dlx/common/file_lock.hpp"
#include "dlx/data/node_local_dir.hpp"
#include "dlx/data/stage.hpp"
#include "dlx/launch/launch_error.hpp"
#include "dlx/store/code_info.hpp"

namespace dlx::launch {

namespace fs = std::filesystem;

namespace {

// One copy per trial and attempt: the trials a task runs at once (resources.trials_per_task) each
// write their own files in their own working directory.
std::string copy_key(const env::EnvMap& env) {
  const auto job = env::lookup(env, "SLURM_JOB_ID").value_or(fmt::format("pid{}", ::getppid()));
  const auto step = env::lookup(env, "SLURM_STEP_ID").value_or("0");
  const auto restart = env::lookup(env, "SLURM_RESTART_COUNT").value_or("0");
  const auto trial = env::lookup(env, "DLX_TRIAL_ID").value_or("0");
  return fmt::format("code-{}-{}-{}-{}", job, step, restart, trial);
}

// code.json's workdir: where trials start, relative to code/ (written at submission by the
// user's own sbatch; still taken only as a relative path without "..").
fs::path checked_workdir(const std::string& workdir, const fs::path& experiment_dir) {
  const fs::path relative(workdir);
  bool leaves = relative.is_absolute();
  for (const auto& part : relative) leaves = leaves || part == "..";
  if (leaves) {
    throw LaunchError(fmt::format("{}: the workdir '{}' leaves the code snapshot (it is written at submission: "
                                  "submit again)", (experiment_dir / store::kCodeInfoFileName).string(), workdir));
  }
  return relative;
}

UniqueFd open_directory_at(int parent, const fs::path& relative, const fs::path& shown) {
  UniqueFd fd(::openat(parent, relative.empty() ? "." : relative.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw LaunchError(fmt::format("cannot open {}: {}", shown.string(), std::strerror(errno)));
  return fd;
}

[[noreturn]] void lock_failed(const fs::path& path, int error) {
  throw LaunchError(fmt::format("cannot lock {}: {}", path.string(), std::strerror(error)));
}

// code.json, the snapshot's record; nullopt when the experiment has none.
std::optional<nlohmann::json> read_snapshot_record(const fs::path& experiment_dir) {
  try {
    return store::read_code_info(experiment_dir);
  } catch (const std::exception& e) {
    throw LaunchError(fmt::format("cannot read the code snapshot's record: {}", e.what()));
  }
}

data::NodeLocalDir open_scratch(const fs::path& local_root) {
  try {
    return std::move(*data::open_node_local_dir(local_root, /*create=*/true, data::NodeLocalUse::code_copy));
  } catch (const data::DataError& e) {
    throw LaunchError(e.what());
  }
}

// <key>.lock in the scratch directory, held exclusively: the ranks of a step take turns to find
// (or make) the copy.
FileLock lock_exclusively(const data::NodeLocalDir& scratch, const std::string& key) {
  const std::string lock_name = key + ".lock";
  const fs::path lock_path = scratch.path / lock_name;
  UniqueFd lock_fd(::openat(scratch.fd.get(), lock_name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!lock_fd) lock_failed(lock_path, errno);
  FileLock lock(std::move(lock_fd), lock_path, LockOwner::description);
  try {
    lock.lock(LockMode::exclusive);
  } catch (const SystemError& e) {
    lock_failed(lock_path, e.error_number());
  }
  return lock;
}

// Under the exclusive lock: copies the snapshot to <scratch>/<key> and marks it <key>.done, unless
// an earlier rank did. A half-made copy (no marker) is removed first, and again when this copy fails.
void copy_snapshot_once(const data::NodeLocalDir& scratch, const std::string& key, const fs::path& snapshot,
                        const fs::path& code_dir, std::FILE* log) {
  const std::string done_name = key + ".done";
  struct stat done {};
  if (::fstatat(scratch.fd.get(), done_name.c_str(), &done, AT_SYMLINK_NOFOLLOW) == 0) return;
  const auto started = std::chrono::steady_clock::now();
  try {
    data::remove_tree_at(scratch.fd.get(), key, code_dir);
    // store's copy takes paths: this one goes through the checked handle, not through <base>.
    const auto bytes = store::copy_code_tree(snapshot, fs::path(fmt::format("/proc/self/fd/{}", scratch.fd.get())) / key);
    UniqueFd marker(::openat(scratch.fd.get(), done_name.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!marker) throw SystemError("create " + (scratch.path / done_name).string(), errno);
    if (log) {
      fmt::print(log, "dlx-launch: code snapshot copied to {} ({} in {:.2f} s)\n", code_dir.string(),
                 format_byte_size(bytes),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    }
  } catch (const std::exception& e) {
    try {
      data::remove_tree_at(scratch.fd.get(), key, code_dir);
    } catch (const data::DataError&) {
    }
    throw LaunchError(fmt::format("cannot copy the code snapshot {} to {}: {} (is the node's "
                                  "local disk full? the site may set code: {{run_from: shared}})",
                                  snapshot.string(), code_dir.string(), e.what()));
  }
}

}  // namespace

std::optional<CodeWorkdir> CodeWorkdir::prepare(const fs::path& experiment_dir, const config::Experiment& experiment,
                                                const env::EnvMap& env, const fs::path& local_root,
                                                std::FILE* log) {
  const auto info = read_snapshot_record(experiment_dir);
  if (!info) return std::nullopt;
  const fs::path snapshot = experiment_dir / store::kCodeDirName;
  const fs::path workdir = checked_workdir(info->value("workdir", ""), experiment_dir);
  CodeWorkdir result;
  if (experiment.code.run_from == config::CodeConfig::RunFrom::shared) {
    result.code_dir_ = snapshot;
    result.working_dir_ = workdir.empty() ? snapshot : snapshot / workdir;
    result.working_fd_ = open_directory_at(AT_FDCWD, result.working_dir_, result.working_dir_);
    return result;
  }
  data::NodeLocalDir scratch = open_scratch(local_root);
  result.key_ = copy_key(env);
  result.code_dir_ = scratch.path / result.key_;
  result.working_dir_ = workdir.empty() ? result.code_dir_ : result.code_dir_ / workdir;
  result.lock_ = lock_exclusively(scratch, result.key_);
  copy_snapshot_once(scratch, result.key_, snapshot, result.code_dir_, log);
  // The marker, made once every file was copied: a file of the copy written later is the trainer's.
  std::error_code marker_error;
  result.copied_at_ = fs::last_write_time(
      fs::path(fmt::format("/proc/self/fd/{}", scratch.fd.get())) / (result.key_ + ".done"), marker_error);
  if (marker_error) {
    throw LaunchError(fmt::format("cannot read the code copy's marker in {}: {}", scratch.path.string(),
                                  marker_error.message()));
  }
  // The trainer's directory, reached from the checked handle; its path is handed out only once it
  // is proven to name the same directory.
  const UniqueFd code_fd(::openat(scratch.fd.get(), result.key_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!code_fd) {
    throw LaunchError(fmt::format("cannot open {}: {}", result.code_dir_.string(), std::strerror(errno)));
  }
  result.working_fd_ = open_directory_at(code_fd.get(), workdir, result.working_dir_);
  try {
    data::prove_same_directory(result.code_dir_, code_fd.get());
    data::prove_same_directory(result.working_dir_, result.working_fd_.get());
  } catch (const data::DataError& e) {
    throw LaunchError(e.what());
  }
  result.scratch_ = std::move(scratch.fd);
  // Held while the trainer runs: a conversion from the exclusive lock, which is always granted.
  try {
    result.lock_.try_lock(LockMode::shared);
  } catch (const SystemError& e) {
    lock_failed(result.lock_.path(), e.error_number());
  }
  return result;
}

void CodeWorkdir::enter() const {
  if (::fchdir(working_fd_.get()) != 0) {
    throw LaunchError(fmt::format("cannot enter {}: {}", working_dir_.string(), std::strerror(errno)));
  }
}

bool CodeWorkdir::alone_in_copy() {
  if (lock_.fd() < 0 || !scratch_) return false;
  try {
    return lock_.try_lock(LockMode::exclusive);
  } catch (const Error&) {
    return false;
  }
}

fs::path CodeWorkdir::copy_view() const {
  return fs::path(fmt::format("/proc/self/fd/{}", scratch_.get())) / key_;
}

CodeWorkdir::~CodeWorkdir() {
  if (lock_.fd() < 0 || !scratch_) return;
  // The last rank of this step on this node removes the copy; the others still hold shared locks.
  try {
    if (!lock_.try_lock(LockMode::exclusive)) return;
    data::remove_tree_at(scratch_.get(), key_, code_dir_);
  } catch (const Error&) {
    return;  // a destructor does not throw: the copy stays, as when another rank still holds it
  }
  ::unlinkat(scratch_.get(), (key_ + ".done").c_str(), 0);
  ::unlinkat(scratch_.get(), (key_ + ".lock").c_str(), 0);
}

}  // namespace dlx::launch
