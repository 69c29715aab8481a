// SPDX-License-Identifier: Apache-2.0
#pragma once
// The notice a run got, kept beside trial.h5 (trials/<id>/last-notice.json) by rank 0's
// dlx-launch the moment it comes, for the run after it.
//
// A trainer that does not reach its next point between two batches before Slurm kills the step
// (a batch longer than the notice's lead, a save slower than KillWait) records no exit: the next
// run's restart had no cause but "unknown", as for a node failure. With the marker, the next run's
// recorder (launcher/sdk/src/trial_recorder.cpp) finds that this run got a notice, classifies it as
// a saved run's stop would have been (notice_cause.hpp: time_limit, preemption, requeue, notice)
// and says in the restart's reason that the trainer was killed before it could save.
//
// One writer (rank 0's dlx-launch; one run of a trial at a time), replaced whole (temp + fsync +
// rename); never removed: a marker counts only for the run it names (its job and restart count,
// as trial.h5 records them), so a stale one is ignored.
//   {"slurm_job_id": "41_3", "restarts": 2, "signal": 12, "unix_time": 1764656000,
//    "job_end": "1764656060"}
// job_end: the job's end time as dlx-launch knew it (Slurm's SLURM_JOB_END_TIME, else its own
// DLX_JOB_END_TIME: unix seconds or "UNLIMITED"), "" when unknown.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace dlx::env {

inline constexpr const char* kNoticeMarkerName = "last-notice.json";

struct NoticeMarker {
  std::string slurm_job_id;  // TrialEnvironment::slurm_job_id of the run
  int restarts = 0;          // and its SLURM_RESTART_COUNT
  int signal_number = 0;
  std::int64_t unix_time = 0;  // when dlx-launch got the notice
  std::string job_end;

  bool operator==(const NoticeMarker&) const = default;
};

// Writes the marker into the trial's directory, replacing any. Throws dlx::Error.
void write_notice_marker(const std::filesystem::path& trial_dir, const NoticeMarker& marker);

// The marker in the trial's directory; nullopt when there is none or it cannot be read (a marker
// only refines a restart's cause: nothing fails without it).
std::optional<NoticeMarker> read_notice_marker(const std::filesystem::path& trial_dir);

}  // namespace dlx::env
