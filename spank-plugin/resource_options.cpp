// SPDX-License-Identifier: Apache-2.0
#include "resource_options.hpp"

namespace dlx::spank {

std::vector<std::pair<std::string, std::string>> resource_options(const config::Experiment& experiment) {
  const auto& resources = experiment.resources;
  std::vector<std::pair<std::string, std::string>> options{
      {"nodes", std::to_string(resources.nodes_per_trial)},
      {"ntasks-per-node", std::to_string(resources.tasks_per_node)},
  };
  if (config::shares_gpus_by_shards(resources)) {
    // Slurm places up to trials_per_gpu such trials on one GPU and sets CUDA_VISIBLE_DEVICES to it.
    options.emplace_back("gres", "shard:" + std::to_string(config::shards_per_trial(resources)));
  } else if (resources.gpus_per_node) {
    options.emplace_back("gpus-per-node", std::to_string(*resources.gpus_per_node));
  }
  if (resources.cpus_per_task) options.emplace_back("cpus-per-task", std::to_string(*resources.cpus_per_task));
  if (resources.mem_per_node) options.emplace_back("mem", *resources.mem_per_node);
  if (resources.time_limit) options.emplace_back("time", *resources.time_limit);
  if (resources.partition) options.emplace_back("partition", *resources.partition);
  return options;
}

}  // namespace dlx::spank
