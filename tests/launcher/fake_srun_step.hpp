// SPDX-License-Identifier: Apache-2.0
#pragma once
// The environment srun gives one task of a trial's step, for running the real dlx-launch in
// tests without Slurm (the data, MASTER_PORT and refusal tests meet their other rank through the
// trial directory, as on a cluster), and the code snapshot such a trial runs from.
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

#include "dlx/store/code_snapshot.hpp"

namespace dlx::test {

// Rank `rank` of a 2-node step (1 task per node) of job 1234, step 0, in trial 1 of `dir`.
inline std::map<std::string, std::string> two_node_step_env(const std::filesystem::path& dir, int rank) {
  return {{"SLURM_JOB_ID", "1234"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_PROCID", std::to_string(rank)},
          {"SLURM_STEP_NUM_TASKS", "2"},
          {"SLURM_LOCALID", "0"},
          {"SLURM_NODEID", std::to_string(rank)},
          {"SLURM_STEP_NUM_NODES", "2"},
          {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"},
          {"SLURM_STEP_NODELIST", "dlxfake[1-2]"},
          {"SLURMD_NODENAME", "dlxfake" + std::to_string(rank + 1)},
          {"SLURM_LAUNCH_NODE_IPADDR", "10.9.8.7"},
          {"DLX_EXPERIMENT_DIR", dir.string()},
          {"DLX_TRIAL_ID", "1"},
          {"DLX_HPARAMS", R"({"learning_rate":0.1,"batch_size":16,"epochs":5})"}};
}

// The code snapshot sbatch would make in experiment directory `dir` of <dir>/src, which holds
// train.sh ("echo trained"): each rank's dlx-launch then makes its node-local copy and runs the
// trainer there.
inline void snapshot_train_sh(const std::filesystem::path& dir) {
  const auto source = dir / "src";
  std::filesystem::create_directories(source);
  std::ofstream(source / "train.sh") << "echo trained\n";
  dlx::store::CodeRequest request;
  request.submit_dir = source;
  request.dir = source;
  request.max_size = 1 << 20;
  auto plan = dlx::store::plan_code_snapshot(request);
  if (!plan) throw std::runtime_error("no code snapshot planned of " + source.string());
  dlx::store::write_code_snapshot(*plan, dir);
}

}  // namespace dlx::test
