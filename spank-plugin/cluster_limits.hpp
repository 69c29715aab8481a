#pragma once
#include <optional>

namespace dlx::spank {

// The cluster's MaxArraySize, asked of slurmctld through the libslurm that sbatch already loaded
// (looked up at run time, so the plugin never loads a second libslurm); nullopt when unknown.
std::optional<unsigned> cluster_max_array_size();

}  // namespace dlx::spank
