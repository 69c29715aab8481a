// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/code_workdir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "dlx/common/byte_size.hpp"
#include "dlx/common/error.hpp"
#include "dlx/common/file_lock.hpp"
#include "dlx/data/node_local_dir.hpp"
#include "dlx/data/stage.hpp"
#include "dlx/launch/launch_error.hpp"
#include "dlx/launch/restored_outputs.hpp"
#include "dlx/store/code_info.hpp"

namespace dlx::launch {

namespace fs = std::filesystem;

namespace {

// The trial's outputs/ (what earlier attempts kept) and code.keep_outputs: restored into a new
// copy (restored_outputs.hpp). An empty dir: nothing to restore.
struct KeptOutputsSource {
  fs::path dir;
  std::uint64_t max_bytes = 0;
};

KeptOutputsSource kept_outputs_of(const fs::path& experiment_dir, const config::Experiment& experiment,
                                  std::int64_t trial_id) {
  if (experiment.code.keep_outputs == 0) return {};
  return {experiment_dir / "trials" / std::to_string(trial_id) / "outputs", experiment.code.keep_outputs};
}

// `name` in the directory open as `fd`, as a path that goes through the checked handle (for the
// calls that take paths: the copy, the marker's time, the outputs' walk).
fs::path through_handle(int fd, const std::string& name) {
  return fs::path(fmt::format("/proc/self/fd/{}", fd)) / name;
}

// One copy per trial and attempt: the trials a task runs at once (resources.trials_per_task) each
// write their own files in their own working directory. `trial_id`: the searcher's trial (a
// packed task's DLX_TRIAL_ID is its ticket).
std::string copy_key(const env::EnvMap& env, std::int64_t trial_id) {
  const auto job = env::lookup(env, "SLURM_JOB_ID").value_or(fmt::format("pid{}", ::getppid()));
  const auto step = env::lookup(env, "SLURM_STEP_ID").value_or("0");
  const auto restart = env::lookup(env, "SLURM_RESTART_COUNT").value_or("0");
  return fmt::format("code-{}-{}-{}-{}", job, step, restart, trial_id);
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

// What a crash's explanation needs of code.json (snapshot_gap.hpp); fields it lacks stay empty.
SnapshotOrigin snapshot_origin(const nlohmann::json& info, const fs::path& snapshot, const fs::path& workdir) {
  SnapshotOrigin origin{.snapshot = snapshot, .workdir = workdir};
  if (const auto source = info.find("source"); source != info.end() && source->is_string()) {
    origin.source = source->get<std::string>();
  }
  if (const auto git = info.find("git"); git != info.end() && git->is_boolean()) origin.git = git->get<bool>();
  if (const auto created = info.find("created_unix"); created != info.end() && created->is_number()) {
    origin.created_unix = created->get<std::int64_t>();
  }
  if (const auto skipped = info.find("skipped"); skipped != info.end() && skipped->is_array()) {
    for (const auto& entry : *skipped) {
      if (entry.is_object() && entry.value("path", nlohmann::json()).is_string() &&
          entry.value("reason", nlohmann::json()).is_string()) {
        origin.skipped.emplace_back(entry["path"].get<std::string>(), entry["reason"].get<std::string>());
      }
    }
  }
  return origin;
}

data::NodeLocalDir open_scratch(const fs::path& local_root) {
  try {
    return std::move(*data::open_node_local_dir(local_root, /*create=*/true, data::NodeLocalUse::code_copy));
  } catch (const data::DataError& e) {
    throw LaunchError(e.what());
  }
}

// <key>.lock in the scratch directory, not locked yet.
FileLock open_copy_lock(const data::NodeLocalDir& scratch, const std::string& key) {
  const std::string lock_name = key + ".lock";
  const fs::path lock_path = scratch.path / lock_name;
  UniqueFd lock_fd(::openat(scratch.fd.get(), lock_name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!lock_fd) lock_failed(lock_path, errno);
  return FileLock(std::move(lock_fd), lock_path, LockOwner::description);
}

bool copy_marked(int scratch_fd, const std::string& key) {
  struct stat done {};
  return ::fstatat(scratch_fd, (key + ".done").c_str(), &done, AT_SYMLINK_NOFOLLOW) == 0;
}

// Under the exclusive lock: copies the snapshot to <scratch>/<key> and marks it <key>.done. A
// half-made copy (no marker) is removed first, and again when this copy fails.
void copy_snapshot(const data::NodeLocalDir& scratch, const std::string& key, const fs::path& snapshot,
                   const fs::path& code_dir, const KeptOutputsSource& outputs, std::FILE* log) {
  const std::string done_name = key + ".done";
  const auto started = std::chrono::steady_clock::now();
  try {
    data::remove_tree_at(scratch.fd.get(), key, code_dir);
    // store's copy takes paths: this one goes through the checked handle, not through <base>.
    const auto bytes = store::copy_code_tree(snapshot, through_handle(scratch.fd.get(), key));
    const std::chrono::duration<double> copying = std::chrono::steady_clock::now() - started;
    if (log) {
      fmt::print(log, "dlx-launch: code snapshot copied to {} ({} in {:.2f} s)\n", code_dir.string(),
                 format_byte_size(bytes), copying.count());
    }
    // What earlier attempts kept, before the marker: the copy is whole only with them.
    if (!outputs.dir.empty()) {
      print_restored_outputs(log, restore_kept_outputs(outputs.dir, through_handle(scratch.fd.get(), key),
                                                       outputs.max_bytes), outputs.dir);
    }
    UniqueFd marker(::openat(scratch.fd.get(), done_name.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!marker) throw SystemError("create " + (scratch.path / done_name).string(), errno);
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

// Returns holding `lock` shared on a finished copy. A rank looks for the copy's marker under a
// shared lock, which waits only while another rank holds the exclusive one to copy; without a
// marker it converts to the exclusive lock, granted only when no other rank holds one, and copies.
// Two ranks that look at once both fail to convert: each lets go and tries again after a random
// pause. (A rank that waited for the exclusive lock itself would wait for as long as the first
// rank's trainer runs, holding its shared lock, and that trainer waits for this rank's: a DDP or
// MPI trial of several ranks per node never started.)
void attach_to_copy(FileLock& lock, const data::NodeLocalDir& scratch, const std::string& key,
                    const fs::path& snapshot, const fs::path& code_dir, const KeptOutputsSource& outputs,
                    std::FILE* log) {
  std::minstd_rand pauses(std::random_device{}());
  try {
    for (;;) {
      lock.lock(LockMode::shared);
      if (copy_marked(scratch.fd.get(), key)) return;
      if (lock.try_lock(LockMode::exclusive)) {
        copy_snapshot(scratch, key, snapshot, code_dir, outputs, log);
        lock.try_lock(LockMode::shared);  // a conversion from the exclusive lock: always granted
        return;
      }
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(5 + pauses() % 45));
    }
  } catch (const SystemError& e) {
    lock_failed(lock.path(), e.error_number());
  }
}

}  // namespace

std::optional<CodeWorkdir> CodeWorkdir::prepare(const fs::path& experiment_dir, const config::Experiment& experiment,
                                                const env::EnvMap& env, std::int64_t trial_id,
                                                const fs::path& local_root, std::FILE* log) {
  const auto info = read_snapshot_record(experiment_dir);
  if (!info) return std::nullopt;
  const fs::path snapshot = experiment_dir / store::kCodeDirName;
  const fs::path workdir = checked_workdir(info->value("workdir", ""), experiment_dir);
  CodeWorkdir result;
  result.origin_ = snapshot_origin(*info, snapshot, workdir);
  if (experiment.code.run_from == config::CodeConfig::RunFrom::shared) {
    result.code_dir_ = snapshot;
    result.working_dir_ = workdir.empty() ? snapshot : snapshot / workdir;
    result.working_fd_ = open_directory_at(AT_FDCWD, result.working_dir_, result.working_dir_);
    return result;
  }
  data::NodeLocalDir scratch = open_scratch(local_root);
  result.key_ = copy_key(env, trial_id);
  result.code_dir_ = scratch.path / result.key_;
  result.working_dir_ = workdir.empty() ? result.code_dir_ : result.code_dir_ / workdir;
  result.lock_ = open_copy_lock(scratch, result.key_);
  attach_to_copy(result.lock_, scratch, result.key_, snapshot, result.code_dir_,
                 kept_outputs_of(experiment_dir, experiment, trial_id), log);
  // The marker, made once every file was copied: a file of the copy written later is the trainer's.
  std::error_code marker_error;
  result.copied_at_ = fs::last_write_time(
      through_handle(scratch.fd.get(), result.key_ + ".done"), marker_error);
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
  result.scratch_ = std::move(scratch.fd);  // the shared lock is held while the trainer runs
  return result;
}

void CodeWorkdir::enter() const {
  if (::fchdir(working_fd_.get()) != 0) {
    throw LaunchError(fmt::format("cannot enter {}: {}", working_dir_.string(), std::strerror(errno)));
  }
}

bool CodeWorkdir::alone_in_copy() {
  if (lock_.fd() < 0 || !scratch_ || leaving_) return alone_;
  leaving_ = true;
  try {
    // This rank's shared lock goes first: two ranks leaving at once would each still see the
    // other's, and neither would be the last. Whoever then gets the exclusive lock while the
    // copy's marker is there is the last; a rank that gets it after the copy was removed is not.
    lock_.unlock();
    if (!lock_.try_lock(LockMode::exclusive)) return false;
    if (!copy_marked(scratch_.get(), key_)) {
      lock_.unlock();
      return false;
    }
    alone_ = true;
  } catch (const Error&) {
    return false;
  }
  return true;
}

fs::path CodeWorkdir::copy_view() const {
  return through_handle(scratch_.get(), key_);
}

CodeWorkdir::~CodeWorkdir() {
  if (lock_.fd() < 0 || !scratch_ || (leaving_ && !alone_)) return;
  // The last rank of this step on this node removes the copy; the others still hold shared locks.
  try {
    if (!alone_ && !lock_.try_lock(LockMode::exclusive)) return;
    data::remove_tree_at(scratch_.get(), key_, code_dir_);
  } catch (const Error&) {
    return;  // a destructor does not throw: the copy stays, as when another rank still holds it
  }
  ::unlinkat(scratch_.get(), (key_ + ".done").c_str(), 0);
  ::unlinkat(scratch_.get(), (key_ + ".lock").c_str(), 0);
}

}  // namespace dlx::launch
