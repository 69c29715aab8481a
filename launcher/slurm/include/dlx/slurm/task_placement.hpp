// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where this task sits in a parallel job (env::TaskPlacement: rank, world size, local rank, node,
// first node, GPUs), read from the environment. This reader is the only Slurm-specific code in the
// launcher. Sources, in order of precedence:
//   mpirun (Open MPI): OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE} (PMIX_RANK for the rank
//                      when OMPI_COMM_WORLD_RANK is missing). Checked first because mpirun inside
//                      an allocation inherits the batch shell's SLURM_PROCID=0.
//   srun (detected by SLURM_STEP_NUM_TASKS, which the batch shell lacks):
//                      SLURM_PROCID, SLURM_STEP_NUM_TASKS (or SLURM_NTASKS), SLURM_LOCALID,
//                      SLURM_NODEID, SLURM_STEP_NUM_NODES (or SLURM_JOB_NUM_NODES/SLURM_NNODES),
//                      SLURM_STEP_TASKS_PER_NODE (or SLURM_TASKS_PER_NODE, else
//                      SLURM_NTASKS_PER_NODE), SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST).
//   neither:           a single process: rank 0 of 1.
// Node name: SLURMD_NODENAME, else the host name passed in. GPUs: CUDA_VISIBLE_DEVICES when set
// (even empty), else SLURM_STEP_GPUS, else SLURM_JOB_GPUS.
#include <string>
#include <string_view>
#include <vector>

#include "dlx/env/environment.hpp"
#include "dlx/env/task_placement.hpp"

namespace dlx::slurm {

// Pure: everything comes from `env` and `hostname`. Throws env::EnvError naming the variable on a
// malformed or inconsistent value (rank >= world size, ...).
env::TaskPlacement read_task_placement(const env::EnvMap& env, std::string_view hostname);

// "0,1,3" -> {"0","1","3"}; "" -> {}. Also accepts Slurm's "NoDevFiles" as none.
std::vector<std::string> parse_gpu_list(std::string_view list);

}  // namespace dlx::slurm
