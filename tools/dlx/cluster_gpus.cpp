// SPDX-License-Identifier: Apache-2.0
#include "cluster_gpus.hpp"

#include <chrono>

#include "dlx/common/bounded_command.hpp"
#include "slurm_facts.hpp"

namespace dlx::cli {

std::vector<spank::NodeGres> node_gres_of(const std::string& scontrol_nodes_report) {
  std::vector<spank::NodeGres> nodes;
  for (const auto& node : doctor::parse_nodes(scontrol_nodes_report)) {
    const auto gres = node.find("Gres");
    if (gres == node.end()) return {};  // not a report this check can read: it says nothing
    nodes.push_back({node.at("NodeName"), gres->second});
  }
  return nodes;
}

std::optional<std::string> cluster_gpu_refusal(const config::Experiment& experiment) {
  if (!experiment.resources.gpus_per_node.value_or(0)) return std::nullopt;
  try {
    const auto result = run_bounded({"scontrol", "--all", "--future", "--oneliner", "show", "node"},
                                    {std::chrono::seconds(5), 16 << 20});
    if (result.exit_code != 0) return std::nullopt;
    return spank::unplaceable_gpu_request(experiment, node_gres_of(result.out));
  } catch (const CommandError&) {
    return std::nullopt;  // no Slurm client here, or no answer in time
  }
}

}  // namespace dlx::cli
