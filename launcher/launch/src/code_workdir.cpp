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
#include "dlx/launch/launch_error.hpp"
#include "dlx/store/code_info.hpp"

namespace dlx::launch {

namespace fs = std::filesystem;

namespace {

// <local_root>/dlx-<uid>: made 0700 and accepted only as this user's own real directory that
// nobody else can write (another user could otherwise plant a link or swap the copy).
fs::path user_scratch_dir(const fs::path& local_root) {
  const fs::path dir = local_root / fmt::format("dlx-{}", ::geteuid());
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw LaunchError(fmt::format("cannot create {} for the node-local code copy: {} (the node-local "
                                  "directory is the site's local_dir=, else Slurm's TmpFS, else TMPDIR, else "
                                  "/tmp: ask your administrator)", dir.string(), std::strerror(errno)));
  }
  struct stat info {};
  if (::lstat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::geteuid() ||
      (info.st_mode & 077) != 0) {
    throw LaunchError(fmt::format("{} is not your own private directory (a link, another user's, or "
                                  "open to others): refusing to copy the code there (remove it, or set TMPDIR)",
                                  dir.string()));
  }
  return dir;
}

std::string copy_key(const env::EnvMap& env) {
  const auto job = env::lookup(env, "SLURM_JOB_ID").value_or(fmt::format("pid{}", ::getppid()));
  const auto step = env::lookup(env, "SLURM_STEP_ID").value_or("0");
  const auto restart = env::lookup(env, "SLURM_RESTART_COUNT").value_or("0");
  return fmt::format("code-{}-{}-{}", job, step, restart);
}

}  // namespace

std::optional<CodeWorkdir> CodeWorkdir::prepare(const fs::path& experiment_dir, const config::Experiment& experiment,
                                                const env::EnvMap& env, const fs::path& local_root,
                                                std::FILE* log) {
  std::optional<nlohmann::json> info;
  try {
    info = store::read_code_info(experiment_dir);
  } catch (const std::exception& e) {
    throw LaunchError(fmt::format("cannot read the code snapshot's record: {}", e.what()));
  }
  if (!info) return std::nullopt;
  const fs::path snapshot = experiment_dir / store::kCodeDirName;
  const std::string workdir = info->value("workdir", "");
  CodeWorkdir result;
  if (experiment.code.run_from == config::CodeConfig::RunFrom::shared) {
    result.code_dir_ = snapshot;
    result.working_dir_ = workdir.empty() ? snapshot : snapshot / workdir;
    return result;
  }
  const fs::path scratch = user_scratch_dir(local_root);
  const std::string key = copy_key(env);
  result.code_dir_ = scratch / key;
  result.working_dir_ = workdir.empty() ? result.code_dir_ : result.code_dir_ / workdir;
  result.lock_path_ = scratch / (key + ".lock");
  result.done_path_ = scratch / (key + ".done");
  UniqueFd lock_fd(::open(result.lock_path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!lock_fd) {
    throw LaunchError(fmt::format("cannot lock {}: {}", result.lock_path_.string(), std::strerror(errno)));
  }
  result.lock_ = FileLock(std::move(lock_fd), result.lock_path_, LockOwner::description);
  try {
    result.lock_.lock(LockMode::exclusive);
  } catch (const SystemError& e) {
    throw LaunchError(fmt::format("cannot lock {}: {}", result.lock_path_.string(),
                                  std::strerror(e.error_number())));
  }
  std::error_code error;
  if (!fs::exists(result.done_path_, error)) {
    const auto started = std::chrono::steady_clock::now();
    try {
      fs::remove_all(result.code_dir_, error);  // a copy an earlier rank did not finish
      const auto bytes = store::copy_code_tree(snapshot, result.code_dir_);
      UniqueFd done(::open(result.done_path_.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
      if (!done) throw SystemError("create " + result.done_path_.string(), errno);
      if (log) {
        fmt::print(log, "dlx-launch: code snapshot copied to {} ({} in {:.2f} s)\n", result.code_dir_.string(),
                   format_byte_size(bytes),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
      }
    } catch (const std::exception& e) {
      fs::remove_all(result.code_dir_, error);
      throw LaunchError(fmt::format("cannot copy the code snapshot {} to {}: {} (is the node's "
                                    "local disk full? the site may set code: {{run_from: shared}})",
                                    snapshot.string(), result.code_dir_.string(), e.what()));
    }
  }
  // Held while the trainer runs: a conversion from the exclusive lock, which is always granted.
  try {
    result.lock_.try_lock(LockMode::shared);
  } catch (const SystemError& e) {
    throw LaunchError(fmt::format("cannot lock {}: {}", result.lock_path_.string(),
                                  std::strerror(e.error_number())));
  }
  return result;
}

CodeWorkdir::~CodeWorkdir() {
  if (lock_.fd() < 0 || lock_path_.empty()) return;
  // The last rank of this step on this node removes the copy; the others still hold shared locks.
  try {
    if (!lock_.try_lock(LockMode::exclusive)) return;
  } catch (const SystemError&) {
    return;  // a destructor does not throw: the copy stays, as when another rank still holds it
  }
  std::error_code ignored;
  fs::remove_all(code_dir_, ignored);
  fs::remove(done_path_, ignored);
  fs::remove(lock_path_, ignored);
}

}  // namespace dlx::launch
