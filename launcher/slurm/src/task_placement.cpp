// SPDX-License-Identifier: Apache-2.0
#include "dlx/slurm/task_placement.hpp"

#include <fmt/format.h>

#include "dlx/slurm/hostlist.hpp"
#include "dlx/slurm/tasks_per_node.hpp"

namespace dlx::slurm {

using env::EnvError;
using env::Launcher;
using env::TaskPlacement;
using env::lookup;
using env::lookup_int;

namespace {

int int_or(const env::EnvMap& env, std::string_view name, int fallback) {
  return lookup_int(env, name).value_or(fallback);
}

void read_mpirun(const env::EnvMap& env, TaskPlacement& out) {
  out.launcher = Launcher::mpirun;
  auto rank = lookup_int(env, "OMPI_COMM_WORLD_RANK");
  out.rank = rank ? *rank : int_or(env, "PMIX_RANK", 0);
  out.world_size = int_or(env, "OMPI_COMM_WORLD_SIZE", 1);
  out.local_rank = int_or(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0);
  out.local_world_size = int_or(env, "OMPI_COMM_WORLD_LOCAL_SIZE", 1);
}

void read_srun(const env::EnvMap& env, TaskPlacement& out) {
  out.launcher = Launcher::srun;
  out.rank = int_or(env, "SLURM_PROCID", 0);
  if (auto tasks = lookup_int(env, "SLURM_STEP_NUM_TASKS")) {
    out.world_size = *tasks;
  } else {
    out.world_size = int_or(env, "SLURM_NTASKS", 1);
  }
  out.local_rank = int_or(env, "SLURM_LOCALID", 0);
  out.node_index = int_or(env, "SLURM_NODEID", 0);
  for (auto name : {"SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES", "SLURM_NNODES"}) {
    if (auto nodes = lookup_int(env, name)) {
      out.num_nodes = *nodes;
      break;
    }
  }
  for (auto name : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
    if (auto spec = lookup(env, name)) {
      out.tasks_per_node = parse_tasks_per_node(name, *spec);
      break;
    }
  }
  if (static_cast<std::size_t>(out.node_index) < out.tasks_per_node.size()) {
    out.local_world_size = out.tasks_per_node[static_cast<std::size_t>(out.node_index)];
  } else if (auto per_node = lookup_int(env, "SLURM_NTASKS_PER_NODE")) {
    out.local_world_size = *per_node;
  }
  for (auto name : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
    if (!hostlist_library_present()) break;  // the portable libdlx_c in an image: unknown
    if (auto list = lookup(env, name); list && !list->empty()) {
      out.first_node = first_host(name, *list);
      break;
    }
  }
}

void check_consistent(const TaskPlacement& out) {
  if (out.world_size < 1) throw EnvError("the world size is 0 (no tasks in this step?)");
  if (out.rank >= out.world_size) {
    throw EnvError(fmt::format("rank {} is not below the world size {} ({} environment)",
                               out.rank, out.world_size, to_string(out.launcher)));
  }
  if (out.local_world_size < 1 || out.local_rank >= out.local_world_size) {
    throw EnvError(fmt::format("local rank {} is not below the local world size {} ({} "
                               "environment)", out.local_rank, out.local_world_size,
                               to_string(out.launcher)));
  }
}

}  // namespace

std::vector<std::string> parse_gpu_list(std::string_view list) {
  std::vector<std::string> out;
  if (list.empty() || list == "NoDevFiles") return out;
  std::size_t start = 0;
  while (true) {
    auto comma = list.find(',', start);
    auto item = list.substr(start, comma == std::string_view::npos ? list.npos : comma - start);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

TaskPlacement read_task_placement(const env::EnvMap& env, std::string_view hostname) {
  TaskPlacement out;
  if (lookup(env, "OMPI_COMM_WORLD_SIZE")) {
    read_mpirun(env, out);
  } else if (lookup(env, "SLURM_PROCID") && lookup(env, "SLURM_STEP_NUM_TASKS")) {
    read_srun(env, out);
  }
  check_consistent(out);
  out.node_name = lookup(env, "SLURMD_NODENAME").value_or(std::string(hostname));
  out.job_id = lookup(env, "SLURM_JOB_ID").value_or("");
  if (auto visible = lookup(env, "CUDA_VISIBLE_DEVICES")) {
    out.gpus = parse_gpu_list(*visible);
  } else if (auto gpus = env::lookup_first(env, {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"})) {
    out.gpus = parse_gpu_list(*gpus);
  }
  return out;
}

}  // namespace dlx::slurm
