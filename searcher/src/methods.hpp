// SPDX-License-Identifier: Apache-2.0
#pragma once
// The per-method pieces behind trial_plan.cpp.
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlx/config/experiment.hpp"

namespace dlx::searcher::detail {

// The size of the grid, or -1 when it exceeds `limit`; and one of its points (grid.hpp: a Grid
// computes both, for planning many points of one experiment).
std::int64_t grid_size(const config::Experiment& experiment, std::int64_t limit);
nlohmann::ordered_json grid_point(const config::Experiment& experiment, std::int64_t index);

nlohmann::ordered_json random_point(const config::Experiment& experiment, std::int64_t trial);

}  // namespace dlx::searcher::detail
