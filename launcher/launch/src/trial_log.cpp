// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/trial_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "dlx/common/directories.hpp"
#include "dlx/common/error.hpp"
#include "dlx/store/trial_logs.hpp"

namespace dlx::launch {

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr int kMaxLogMiB = 1 << 20;  // 1 TiB: past any disk's share, a typo rather than a cap

bool fd_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

// Opens (or appends to: the same run started again by hand) the rank's log, checked to be a
// regular file of this user's, mode 0640 whatever the umask.
UniqueFd open_log(int dir_fd, const std::string& name, const std::filesystem::path& shown) {
  UniqueFd fd(::openat(dir_fd, name.c_str(),
                       O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0640));
  if (!fd) throw SystemError(fmt::format("cannot open {}", shown.string()), errno);
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0) throw SystemError(fmt::format("cannot stat {}", shown.string()), errno);
  if (!S_ISREG(status.st_mode) || status.st_uid != ::geteuid()) {
    throw Error(fmt::format("{} is not a regular file of this user's", shown.string()));
  }
  if (::fchmod(fd.get(), 0640) != 0 || ::fcntl(fd.get(), F_SETFL, O_APPEND) != 0) {
    throw SystemError(fmt::format("cannot set up {}", shown.string()), errno);
  }
  return fd;
}

}  // namespace

std::uint64_t log_max_bytes(const env::EnvMap& env) {
  const auto value = env::lookup(env, "DLX_LOG_MAX_MB");
  if (!value || value->empty()) return kDefaultLogMaxBytes;
  const int mib = env::parse_non_negative_int("DLX_LOG_MAX_MB", *value);
  if (mib > kMaxLogMiB) {
    throw env::EnvError(fmt::format("DLX_LOG_MAX_MB={} is more than {} (MiB per rank and attempt)",
                                    *value, kMaxLogMiB));
  }
  return static_cast<std::uint64_t>(mib) * kMiB;
}

std::string run_key(const env::TrialEnvironment& trial, const env::EnvMap& env) {
  if (!trial.slurm_job_id.empty()) {
    const auto step = env::lookup(env, "SLURM_STEP_ID");
    return fmt::format("{}.{}.{}", trial.slurm_job_id, trial.restarts,
                       step && !step->empty() ? *step : "batch");
  }
  if (const auto pmix = env::lookup(env, "PMIX_NAMESPACE"); pmix && !pmix->empty()) {
    return "pmix-" + *pmix;
  }
  return fmt::format("pid-{}", ::getpid());
}

std::unique_ptr<StdioThroughTee> start_trial_log(const env::TrialEnvironment& trial,
                                                 const env::TaskPlacement& placement,
                                                 const env::EnvMap& env) {
  if (!trial.in_trial()) return nullptr;
  if (::isatty(STDOUT_FILENO) || !fd_open(STDOUT_FILENO) || !fd_open(STDERR_FILENO)) return nullptr;
  const auto logs = store::trial_logs_dir(trial.record_path().parent_path());
  try {
    const auto max_bytes = log_max_bytes(env);
    if (max_bytes == 0) return nullptr;
    create_directories_with_mode(logs);
    UniqueFd dir(::open(logs.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) throw SystemError(fmt::format("cannot open {}", logs.string()), errno);
    struct stat status {};
    if (::fstat(dir.get(), &status) != 0) throw SystemError(fmt::format("cannot stat {}", logs.string()), errno);
    if (status.st_uid != ::geteuid()) throw Error(fmt::format("{} is not this user's", logs.string()));
    const int attempt = store::claim_attempt(dir.get(), run_key(trial, env));
    const auto name = store::attempt_log_name(attempt, placement.rank);
    auto log = open_log(dir.get(), name, logs / name);
    struct stat log_status {};
    ::fstat(log.get(), &log_status);
    const auto used = static_cast<std::uint64_t>(log_status.st_size);
    if (placement.rank == 0) {
      fmt::print(stderr, "dlx-launch: trial {} attempt {}: each rank's output is also kept in {}/"
                 "attempt-{}.rank-<R>.log (dlx logs DIR|JOBID {})\n",
                 trial.trial_id, attempt, logs.string(), attempt, trial.trial_id);
    }
    TeeOptions options;
    options.max_bytes = used < max_bytes ? max_bytes - used : 0;
    return std::make_unique<StdioThroughTee>(std::move(log), options);
  } catch (const std::exception& error) {
    fmt::print(stderr, "dlx-launch: warning: this rank's output is not kept in {}: {} (it still goes "
               "to Slurm's output file)\n", logs.string(), error.what());
    return nullptr;
  }
}

}  // namespace dlx::launch
