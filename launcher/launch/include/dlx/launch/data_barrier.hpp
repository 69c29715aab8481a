// SPDX-License-Identifier: Apache-2.0
#pragma once
// Multi-node trials: rank 0 starts its trainer only once every node of the step has its data
// staged (trial_data.hpp), so that no rank reads a dataset that is still being copied and a node
// that cannot stage fails the trial at once, by name, instead of leaving the others waiting in
// their first collective.
//
// The protocol (the trial directory is on storage that every node of the trial sees):
//   1. Each node's first local rank, after staging, publishes trials/<id>/.data.<run>/node-<K>
//      (K = SLURM_NODEID; written to a temporary and renamed: never seen half-written) holding
//      "ready <node name>", or "failed <node name>: <why>" when its staging failed.
//      <run> = <SLURM_JOB_ID>.<SLURM_RESTART_COUNT>.<SLURM_STEP_ID>, as peer_crash.hpp's: new
//      for every attempt and every srun, so an earlier attempt's files never stand for this one.
//   2. Rank 0, after its own staging, polls the directory until every node index 0..N-1 is
//      ready. A "failed" file ends the wait with that node's message; the deadline (30 min, or
//      DLX_DATA_STAGE_TIMEOUT seconds) ends it with the nodes that never said ready; a rank that
//      stopped before it staged (its code copy refused, say) ends it through peer_crash.hpp.
//   3. Rank 0 removes the directories of earlier runs when it starts waiting.
// Only under srun, inside a trial, with more than one node (the ranks of one node meet on the
// cache entry's lock instead).
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "dlx/env/environment.hpp"
#include "dlx/env/trial_environment.hpp"
#include "dlx/slurm/task_placement.hpp"

namespace dlx::launch {

class DataBarrier {
 public:
  // nullopt where the protocol does not apply (see above) or the run cannot be named.
  static std::optional<DataBarrier> for_run(const env::TrialEnvironment& trial, const env::TaskPlacement& placement,
                                            const env::EnvMap& env);
  // For tests and for for_run: the barrier of `num_nodes` nodes in `directory`.
  DataBarrier(std::filesystem::path directory, int num_nodes) : directory_(std::move(directory)), num_nodes_(num_nodes) {}

  const std::filesystem::path& directory() const noexcept { return directory_; }

  // Step 1, by each node's first local rank. Throws LaunchError when the file cannot be written
  // (rank 0 would then wait in vain).
  void arrive(int node_index, std::string_view node_name) const;
  // Step 1 for a failed node. Never throws: its own error is what the caller reports.
  void fail(int node_index, std::string_view node_name, std::string_view why) const noexcept;

  // Step 2, by rank 0. True once every node is ready; false as soon as `stop` (asked at every
  // poll, when given) says to stop waiting (a notice, another rank's crash). Throws LaunchError
  // naming the failed or missing node(s).
  bool wait_for_all(std::chrono::milliseconds deadline, const std::function<bool()>& stop = {}) const;

  // Step 3, by rank 0: removes other runs' .data.* directories beside this one.
  void remove_stale() const noexcept;

  // The deadline from DLX_DATA_STAGE_TIMEOUT (seconds), else 30 minutes. Throws env::EnvError on
  // a value that is not a number.
  static std::chrono::milliseconds deadline_from(const env::EnvMap& env);

 private:
  std::filesystem::path node_file(int node_index) const;
  void publish(int node_index, const std::string& line) const;

  std::filesystem::path directory_;
  int num_nodes_ = 1;
};

}  // namespace dlx::launch
