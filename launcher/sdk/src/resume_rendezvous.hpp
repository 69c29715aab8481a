// SPDX-License-Identifier: Apache-2.0
#pragma once
// How the ranks of a trial without a dlx communicator (a framework program under dlx-launch:
// PyTorch, JAX, anything on the C API or Python) agree on the checkpoint to resume from.
//
// With MPI, rank 0 chooses and broadcasts the path. Without it each rank would otherwise choose
// for itself, and only rank 0 runs the choice (a file named by DLX_LATEST_CHECKPOINT may fail
// to load, the searcher's start checkpoint is read from the journal, and each node's view of a
// shared directory may lag another's on NFS), so the ranks meet in the trial's directory:
//
//   1. Rank 0 chooses (resume_choice.hpp) and publishes its choice as
//      trials/<id>/.resume.<run>.<n>: one JSON object, {"checkpoint": PATH} ("" for a fresh
//      start) or {"error": MESSAGE}, written to a temporary name, fsynced and renamed, so a
//      reader sees the whole file or none. <run> names this launch of the trial, the same on
//      every rank and new at every launch: DLX_RUN_ID when set, else
//      <SLURM_JOB_ID>.<SLURM_RESTART_COUNT>.<SLURM_STEP_ID>; <n> counts the resume() calls of
//      the process. Choices of earlier launches are removed.
//   2. Every other rank polls for that file (open by name: a new lookup, which NFS's
//      close-to-open consistency answers with the complete file) for up to DLX_RESUME_WAIT_S
//      seconds (default 900: rank 0 may verify several large files first), then loads and
//      verifies the checkpoint it names itself, or throws rank 0's error.
// A rank that dies meanwhile ends the others through dlx-launch (peer_crash.hpp); the wait's
// limit only bounds a run started by hand.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "dlx/env/environment.hpp"

namespace dlx::detail {

struct ResumeChoice {
  std::filesystem::path checkpoint;  // empty: a fresh start
  std::string error;                 // rank 0 could not choose: every rank fails with this
};

class ResumeRendezvous {
 public:
  // The meeting point of call `call` (0, 1, ...) in `trial_dir`. Throws CheckpointingError when
  // the environment names no run (world size > 1 without Slurm or DLX_RUN_ID).
  static ResumeRendezvous for_run(const std::filesystem::path& trial_dir, const env::EnvMap& env,
                                  int call);

  const std::filesystem::path& path() const noexcept { return path_; }

  // Rank 0: writes the choice durably; removes the choices of earlier runs.
  void publish(const ResumeChoice& choice) const;

  // Other ranks: rank 0's choice; throws CheckpointingError when none came within `limit`.
  ResumeChoice wait(std::chrono::milliseconds limit) const;

  // DLX_RESUME_WAIT_S, else 900 s.
  static std::chrono::milliseconds wait_limit(const env::EnvMap& env);

 private:
  ResumeRendezvous(std::filesystem::path path, std::string run_prefix)
      : path_(std::move(path)), run_prefix_(std::move(run_prefix)) {}

  std::filesystem::path path_;
  std::string run_prefix_;  // ".resume.<run>."
};

}  // namespace dlx::detail
