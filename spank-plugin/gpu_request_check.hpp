// SPDX-License-Identifier: Apache-2.0
#pragma once
// The allocator's look at an experiment's GPUs before anything is created: a trial that asks for
// more GPUs (or gres/shards) per node than any node of the cluster has is refused at sbatch, with
// the key the user wrote and what to write instead. Slurm would refuse it too, but only after
// the experiment directory exists, and in its own words ("Invalid generic resource (gres)
// specification" on a cluster without GPUs, "Requested node configuration is not available"
// otherwise), which do not say that Determined's slots_per_trial counts GPUs, not processes.
//
// Only what no node anywhere could hold is refused (every partition's nodes, future and cloud
// nodes too): what Slurm might run is left to Slurm. A node whose generic resources cannot be
// read makes the check say nothing.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlx/config/experiment.hpp"

namespace dlx::spank {

// One node's generic resources as slurmctld lists them (node_info_t.gres): "gpu:4",
// "gpu:a100:4(S:0-1)", "gpu:a100:2,gpu:v100:2,shard:32".
struct NodeGres {
  std::string node;
  std::string gres;
};

// How many of the generic resource `name` one node's list holds, summed over its types
// ("gpu:a100:2,gpu:v100:2": 4 gpu); 0 when it lists none; nullopt when the list cannot be read.
std::optional<long long> gres_count(std::string_view gres, std::string_view name);

// The refusal of the experiment's GPU request per node (resources.gpus_per_node, Determined's
// slots_per_trial, or the shards of trials_per_gpu with shards_per_gpu) when no node in `nodes`
// holds that many; nullopt when some node does, the experiment asks for none, or a node's list
// cannot be read.
std::optional<std::string> unplaceable_gpu_request(const config::Experiment& experiment,
                                                   const std::vector<NodeGres>& nodes);

}  // namespace dlx::spank
