// SPDX-License-Identifier: Apache-2.0
#pragma once
// The environment srun gives one task of a trial's step, for running the real dlx-launch in
// tests without Slurm (the data and MASTER_PORT tests meet their other rank through the trial
// directory, as on a cluster).
#include <filesystem>
#include <map>
#include <string>

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

}  // namespace dlx::test
