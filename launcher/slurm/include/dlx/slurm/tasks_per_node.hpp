// SPDX-License-Identifier: Apache-2.0
#pragma once
// Slurm's compressed per-node task counts, as in SLURM_TASKS_PER_NODE and
// SLURM_STEP_TASKS_PER_NODE: "2(x3),1" means three nodes with 2 tasks, then one node with 1.
#include <string_view>
#include <vector>

namespace dlx::slurm {

// One entry per node, in node order. `variable` names the source in errors (EnvError).
std::vector<int> parse_tasks_per_node(std::string_view variable, std::string_view spec);

}  // namespace dlx::slurm
