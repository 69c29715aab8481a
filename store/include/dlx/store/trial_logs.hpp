#pragma once
// A trial's output, kept by dlx-launch in the trial's directory (docs/file-format.md, "logs"):
//   trials/<id>/logs/                       0750
//     attempt-<N>.run -> <run>              a symbolic link never followed: its target is the run
//                                           key, <job>.<SLURM_RESTART_COUNT>.<SLURM_STEP_ID> (<job>:
//                                           <array job>_<task>, or SLURM_JOB_ID outside an array)
//     attempt-<N>.rank-<R>.log              rank R's stdout and stderr as it wrote them, 0640
// Attempts count the runs of the trial: 0 for the first, then one more for every requeue or
// restart (so attempt N of a trial that Slurm requeued began as its trial.h5 restart_events/<N>
// says). The ranks of one run agree on N without talking to each other (claim_attempt):
//   every rank tries symlink(<run>, "attempt-0.run"), then attempt-1, ..., and takes the first N
//   whose link it created or whose link already names its own run. symlink() creates or fails with
//   EEXIST atomically (on NFS too), each link is made once and never changed, and the runs of one
//   trial follow each other, so every rank of a run stops at the same N, and a later run at the
//   next free one.
#include <filesystem>
#include <string>
#include <vector>

namespace dlx::store {

namespace fs = std::filesystem;

inline constexpr const char* kTrialLogsDirName = "logs";
inline constexpr int kMaxAttempts = 100000;

fs::path trial_logs_dir(const fs::path& trial_dir);
std::string attempt_marker_name(int attempt);           // "attempt-<N>.run"
std::string attempt_log_name(int attempt, int rank);    // "attempt-<N>.rank-<R>.log"

// The attempt number of run `run` in the logs directory open as `logs_dir_fd` (protocol above).
// Throws SystemError when a link cannot be made or read, or past kMaxAttempts.
int claim_attempt(int logs_dir_fd, const std::string& run);

struct RankLog {
  int rank = 0;
  fs::path path;
};

struct AttemptLogs {
  int attempt = 0;
  std::string run;             // the run key ("" when the marker is missing or unreadable)
  std::vector<RankLog> ranks;  // ascending by rank
};

// What `logs_dir` holds, ascending by attempt; names that are not dlx's are skipped, nothing is
// followed or opened. Empty when the directory does not exist; throws SystemError when it cannot
// be read (EACCES: another user's trial).
std::vector<AttemptLogs> list_trial_logs(const fs::path& logs_dir);

}  // namespace dlx::store
