// SPDX-License-Identifier: Apache-2.0
#pragma once
// A trial of several ranks: rank 0 chooses MASTER_PORT on its own node and tells the other ranks,
// instead of every rank computing the same fixed port alone. A fixed port failed whenever anything
// on rank 0's node held it: a trial of another job whose id is this one's modulo 10000, or another
// user squatting the range (the trial then died in init_process_group, "Address already in use",
// and was requeued into the same failure).
//
// The protocol (the trial directory is on storage that every node of the trial sees):
//   1. Rank 0, once the data is staged on every node (data_barrier.hpp), takes the first of the
//      trial's candidates (launch_env.hpp: 20000 + job id % 10000, then the next ports) it can
//      hold, else a port the kernel picks, and holds it (port_reservation.hpp). It removes
//      other runs' files and publishes trials/<id>/.port.<run> holding "port <N>" (written to a
//      temporary and renamed: never seen half-written).
//      <run> = <SLURM_JOB_ID>.<SLURM_RESTART_COUNT>.<SLURM_STEP_ID>.<ticket>: new for every
//      attempt, every srun and every ticket a task runs in turn, so no earlier file stands for
//      this one.
//   2. Every other rank, once its own data is staged, polls for that file (2 ms apart at first,
//      doubling to 100 ms: the wait delays the first step) and gives its trainer
//      MASTER_PORT=<N>. It stops waiting when another rank announced a crash
//      (peer_crash.hpp; rank 0 announces a refusal, e.g. data it could not stage), at a
//      preemption notice (exit 85), and at its deadline: DLX_MASTER_PORT_WAIT_S seconds (default
//      900, plus the data-staging deadline when the experiment stages data), with an error that
//      says rank 0 never told it.
//   3. Rank 0 lets its hold go just before its trainer starts; the trainer's TCPStore binds it.
// Only under srun, inside a trial, with more than one rank, and when the job script did not set
// MASTER_PORT itself (its value wins, on every rank).
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>

#include "dlx/env/environment.hpp"
#include "dlx/env/trial_environment.hpp"
#include "dlx/slurm/task_placement.hpp"

namespace dlx::launch {

class MasterPortRendezvous {
 public:
  // nullopt where the protocol does not apply (see above) or the run cannot be named.
  static std::optional<MasterPortRendezvous> for_run(const env::TrialEnvironment& trial,
                                                     const env::TaskPlacement& placement, const env::EnvMap& env);
  // For tests and for for_run: the rendezvous through `file`.
  explicit MasterPortRendezvous(std::filesystem::path file) : file_(std::move(file)) {}

  const std::filesystem::path& file() const noexcept { return file_; }

  // Step 1, by rank 0. Throws LaunchError when the file cannot be written.
  void publish(int port) const;
  void remove_stale() const noexcept;

  // Step 2: the port rank 0 published. Polls until it is there, or until `stop` (asked at every
  // poll, before the file) returns true: nullopt. Throws LaunchError at `deadline`, and on a file that holds no
  // port (not written by this protocol).
  std::optional<int> wait(std::chrono::milliseconds deadline, const std::function<bool()>& stop) const;

  // DLX_MASTER_PORT_WAIT_S (seconds) else 900 s, plus `staging` (the data's deadline, or zero).
  // Throws env::EnvError on a value that is not a number.
  static std::chrono::milliseconds deadline_from(const env::EnvMap& env, std::chrono::milliseconds staging);

 private:
  std::optional<int> published() const;
  std::filesystem::path file_;
};

}  // namespace dlx::launch
