// SPDX-License-Identifier: Apache-2.0
#pragma once
// bench_searcher --scaling: how ASHA's and random search's times to target fall as the workers
// grow, beside the bound that explains where they stop falling (docs/benchmarks.md, Searcher).
#include <cstdint>
#include <string>
#include <vector>

namespace dlx::bench {

struct ScalingStudy {
  std::string asha;                 // ASHA's searcher keys, "name: async_halving, divisor: 4, ..."
  int trials = 0;
  std::int64_t max_length = 0;
  int first_seed = 0, seeds = 0;
  double noise = 0, target = 0;     // the curve family's noise; the target's final loss
  std::vector<int> workers;         // the worker counts to run, e.g. 1 2 4 ... 128
};

void print_scaling_study(const ScalingStudy& study);

}  // namespace dlx::bench
