// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/allocation_check.hpp"

#include <fmt/format.h>

#include "dlx/launch/launch_error.hpp"

namespace dlx::launch {

namespace {

const char* plural(int count, const char* one, const char* many) {
  return count == 1 ? one : many;
}

void check_tasks(int node, const std::string& node_name, int tasks, int wanted) {
  if (tasks == wanted) return;
  throw LaunchError(fmt::format(
      "this step runs {} {} on node {}{} but the experiment asks for tasks_per_node: "
      "{} (submit with --ntasks-per-node={} / check #SBATCH --ntasks-per-node and the srun "
      "options in the job script)",
      tasks, plural(tasks, "task", "tasks"), node, node_name.empty() ? "" : " (" + node_name + ")",
      wanted, wanted));
}

}  // namespace

void check_allocation(const env::TaskPlacement& placement, const config::Resources& resources) {
  if (placement.num_nodes != resources.nodes_per_trial) {
    throw LaunchError(fmt::format(
        "this step has {} {} but the experiment asks for nodes_per_trial: {} (submit "
        "with sbatch -N {} / check #SBATCH -N and srun -N in the job script)",
        placement.num_nodes, plural(placement.num_nodes, "node", "nodes"),
        resources.nodes_per_trial, resources.nodes_per_trial));
  }
  if (resources.gpus_per_node && *resources.gpus_per_node > 0 && placement.gpus.empty()) {
    throw LaunchError(fmt::format(
        "this step sees no GPU on node {}{} but the experiment asks for "
        "gpus_per_node: {} (submit with --gpus-per-node={} / check #SBATCH --gres or --gpus "
        "and the srun options in the job script)",
        placement.node_index, placement.node_name.empty() ? "" : " (" + placement.node_name + ")",
        *resources.gpus_per_node, *resources.gpus_per_node));
  }
  if (placement.tasks_per_node.empty()) {
    check_tasks(placement.node_index, placement.node_name, placement.local_world_size,
                resources.tasks_per_node);
    return;
  }
  for (std::size_t node = 0; node < placement.tasks_per_node.size(); ++node) {
    const bool mine = static_cast<int>(node) == placement.node_index;
    check_tasks(static_cast<int>(node), mine ? placement.node_name : std::string(),
                placement.tasks_per_node[node], resources.tasks_per_node);
  }
}

}  // namespace dlx::launch
