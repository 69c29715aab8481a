// SPDX-License-Identifier: Apache-2.0
#pragma once
// Does the Slurm step match the experiment's `resources`? Checked under srun only (under mpirun
// or by hand the Slurm variables describe the batch shell, not the ranks).
#include "dlx/config/experiment.hpp"
#include "dlx/slurm/task_placement.hpp"

namespace dlx::launch {

// Throws LaunchError saying what differs and how to fix the submission, e.g.
//   this step has 1 node but the experiment asks for nodes_per_trial: 2 (...)
// (dlx-launch's main prints it after "dlx-launch: ")
void check_allocation(const env::TaskPlacement& placement, const config::Resources& resources);

}  // namespace dlx::launch
