// SPDX-License-Identifier: Apache-2.0
#pragma once
// A crash on one rank ends the run on every rank, so that the trial is requeued (or failed) instead
// of hanging until its time limit.
//
// Why it is needed (verified on the local cluster, docs/fault-tolerance.md): under
// `srun --mpi=pmix dlx-launch` every task is a dlx-launch and the MPI process is its child. When
// one rank's trainer dies (SIGKILL, a segfault, an uncaught error), its dlx-launch exits (85: a
// crash with restarts left), but nothing ends the other ranks: Open MPI over TCP does not report
// the lost peer (the surviving trainer stays blocked in its allreduce), slurmstepd and PMIx do
// not act on the death of a task's child, and srun waits for the remaining tasks (WaitTime=0,
// KillOnBadExit=0). The step, and the job, would hang until the time limit.
//
// The protocol (the trial directory is on storage that every node of the trial sees):
//   1. Announce. A dlx-launch whose own trainer crashed publishes trials/<id>/.crash.<run>
//      (hard link of a written temporary: atomic, and only the first rank's survives) holding the
//      crash (trial_outcome.hpp's TrialCrash, one line of JSON: where "rank 1 on n2", status 137,
//      error "killed by SIGKILL (exit 137)" or "exit 1: ValueError: ..."), before it records
//      anything. A dlx-launch that fails before its trainer starts, on any rank (a code copy or
//      data it could not make, a container that would not start, a MASTER_PORT rank 0 could not
//      tell), announces that the same way, with "refused": true: the trial is failed at once on
//      every rank (exit 1), not restarted, since it would fail alike. A crash on a name the code
//      snapshot left out carries the crashed rank's explanation ("snapshot_gap": snapshot_gap.hpp),
//      which makes it final on every rank too.
//      <run> = <SLURM_JOB_ID>.<SLURM_RESTART_COUNT>.<SLURM_STEP_ID>: the same on every rank of
//      this step, new for every requeued run and every srun, so an old file never ends a new run.
//   2. Watch. Every dlx-launch looks for that file while it waits for the other ranks before its
//      trainer starts (rank 0 for every node's data, the others for MASTER_PORT: it then does not
//      start its trainer) and every second while its trainer runs. On
//      finding it, it SIGKILLs its trainer (blocked in a collective, the trainer could neither
//      checkpoint nor exit) and takes the peer's crash as its own: the same decide_exit (on the
//      announced status and error) on every rank, so every rank exits 85 (srun and the batch
//      script exit 85 and Slurm requeues the trial) or every rank passes the failure through.
//      A rank whose own trainer crashed too takes the crash announced first. Rank 0 records the
//      crash naming the rank that crashed; the requeued run resumes from the last checkpoint.
//   3. Tidy. Rank 0 removes the files of earlier runs when it starts.
// Only under srun, inside a trial, with more than one rank: mpirun ends every rank by itself when
// one exits non-zero.
#include <filesystem>
#include <optional>
#include <string>

#include "dlx/env/environment.hpp"
#include "dlx/launch/trial_outcome.hpp"
#include "dlx/env/trial_environment.hpp"
#include "dlx/slurm/task_placement.hpp"

namespace dlx::launch {

class PeerCrashSignal {
 public:
  // nullopt where the protocol does not apply (see above) or the run cannot be named
  // (SLURM_JOB_ID or SLURM_STEP_ID unset).
  static std::optional<PeerCrashSignal> for_run(const env::TrialEnvironment& trial,
                                                const env::TaskPlacement& placement,
                                                const env::EnvMap& env);

  // trials/<id>/.crash.<run>
  const std::filesystem::path& path() const noexcept { return path_; }

  // Step 2: what another rank announced for this run, or nullopt. Never throws: storage that
  // cannot be read now reads as "nothing yet" and is asked again a second later.
  std::optional<TrialCrash> peer_crash() const noexcept;

  // Step 1: announces `crash`. Returns the crash another rank announced first (that one stands),
  // else nullopt. Never throws: a failure is reported on stderr (the other ranks then hang until
  // the time limit, as without this protocol).
  std::optional<TrialCrash> announce(const TrialCrash& crash) const noexcept;

  // Step 3: removes .crash.* files of other runs from the trial directory (rank 0, at start).
  void remove_stale() const noexcept;

 private:
  explicit PeerCrashSignal(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

}  // namespace dlx::launch
