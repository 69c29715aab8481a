// SPDX-License-Identifier: Apache-2.0
#pragma once
// Rank 0's one-line log per report, for the job's output file:
//   dlx: trial 3 step 200 validation accuracy=0.912 loss=0.231
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dlx/trial.hpp"

namespace dlx::detail {

// True when `metrics` holds exactly `names`, in their order (a report that repeats the previous
// one's names, the common case, needs no lookup of each).
bool has_names(const Metrics& metrics, const std::vector<std::string>& names);

// `trial_id` is nullopt outside a dlx trial ("dlx: step 200 ...").
std::string format_metric_line(std::optional<std::int64_t> trial_id, std::int64_t step,
                               const char* kind, const Metrics& metrics);

}  // namespace dlx::detail
