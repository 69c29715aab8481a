// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where this task sits in a parallel job: rank, world size, local rank, node, first node, GPUs.
// A plain value, part of the trial's context (trial_context.hpp); launcher/slurm reads it from
// Slurm's or mpirun's environment (dlx/slurm/task_placement.hpp), the only Slurm-specific reader.
#include <string>
#include <vector>

namespace dlx::env {

enum class Launcher { none, srun, mpirun };
const char* to_string(Launcher launcher);

struct TaskPlacement {
  Launcher launcher = Launcher::none;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int node_index = 0;               // SLURM_NODEID under srun, else 0
  int num_nodes = 1;                // 1 when the launcher does not say
  std::vector<int> tasks_per_node;  // one entry per node when Slurm says; empty otherwise
  std::string node_name;
  std::string first_node;           // first host of the step's node list; "" when unknown
  std::vector<std::string> gpus;    // visible GPU ids as the variable lists them
  std::string job_id;               // SLURM_JOB_ID; "" outside Slurm
};

}  // namespace dlx::env
