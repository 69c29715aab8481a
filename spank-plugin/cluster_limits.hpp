// SPDX-License-Identifier: Apache-2.0
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "gpu_request_check.hpp"

namespace dlx::spank {

// What the allocator needs of slurmctld's configuration, asked once per submission through the
// libslurm that sbatch already loaded (looked up at run time, so the plugin never loads a second
// libslurm). Empty when it cannot be asked.
struct ClusterFacts {
  std::optional<unsigned> max_array_size;  // MaxArraySize
  std::string tmp_fs;                      // TmpFS as configured (may hold %n); "" when unknown
};

ClusterFacts load_cluster_facts();

// Every node's generic resources (hidden partitions' and future nodes too), asked only for an
// experiment that asks for GPUs; empty when slurmctld cannot be asked.
std::vector<NodeGres> load_node_gres();

}  // namespace dlx::spank
