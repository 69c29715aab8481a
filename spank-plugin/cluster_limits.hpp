// SPDX-License-Identifier: Apache-2.0
#pragma once
#include <optional>
#include <string>

namespace dlx::spank {

// What the allocator needs of slurmctld's configuration, asked once per submission through the
// libslurm that sbatch already loaded (looked up at run time, so the plugin never loads a second
// libslurm). Empty when it cannot be asked.
struct ClusterFacts {
  std::optional<unsigned> max_array_size;  // MaxArraySize
  std::string tmp_fs;                      // TmpFS as configured (may hold %n); "" when unknown
};

ClusterFacts load_cluster_facts();

}  // namespace dlx::spank
