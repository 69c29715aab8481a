// SPDX-License-Identifier: Apache-2.0
#pragma once
// A trial's output, kept by dlx-launch in the trial's directory (docs/file-format.md, "logs"):
//   trials/<id>/logs/                       0750
//     attempt-<N>.run                       the run key, a few bytes: <job>.<SLURM_RESTART_COUNT>.
//                                           <SLURM_STEP_ID> (<job>: <array job>_<task>, or
//                                           SLURM_JOB_ID outside an array), 0640
//     attempt-<N>.rank-<R>.log              rank R's stdout and stderr as it wrote them, 0640
// Attempts count the runs of the trial: 0 for the first, then one more for every requeue or
// restart (so attempt N of a trial that Slurm requeued is the run with SLURM_RESTART_COUNT=N).
// The ranks of one run agree on N without talking to each other (claim_attempt):
//   every rank writes the run key into a temporary file of its own, then hard-links it as
//   "attempt-0.run", then attempt-1, ..., and takes the first N whose marker it created or whose
//   marker already holds its own run key. link() creates the name or fails with EEXIST atomically
//   (on NFS too: the classic lock-file technique), the marker is complete before it has its name,
//   each is made once and never changed, and the runs of one trial follow each other, so every
//   rank of a run stops at the same N, and a later run at the next free one. The temporary
//   (.tmp.attempt.<pid>.<n>) is removed afterwards.
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
