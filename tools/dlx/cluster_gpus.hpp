// SPDX-License-Identifier: Apache-2.0
#pragma once
// The trial's GPUs per node against the cluster's nodes, as sbatch checks them
// (spank-plugin/gpu_request_check.hpp), so that `dlx validate` says what sbatch would refuse. The
// nodes are asked of slurmctld (`scontrol --all --future --oneliner show node`, at most 5 s) only
// for an experiment with GPUs; where Slurm does not answer, nothing is said.
#include <optional>
#include <string>
#include <vector>

#include "dlx/config/experiment.hpp"
#include "gpu_request_check.hpp"

namespace dlx::cli {

// Each node's name and Gres from `scontrol show node -o`'s report; empty when a node has no Gres=.
std::vector<spank::NodeGres> node_gres_of(const std::string& scontrol_nodes_report);

// sbatch's refusal of the experiment's GPUs on this cluster (unplaceable_gpu_request), or nullopt.
std::optional<std::string> cluster_gpu_refusal(const config::Experiment& experiment);

}  // namespace dlx::cli
