// SPDX-License-Identifier: Apache-2.0
#pragma once
// bench_checkpoint's training part: training_overhead_pct of the example trainer checkpointing
// every N steps (trainer_run.hpp), from adjacent pairs of runs with and without checkpoints.
#include <filesystem>

#include "bench_stats.hpp"
#include "trainer_run.hpp"

namespace dlx::bench {

struct TrainingOptions {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "dlx-bench-checkpoint";
  TrainerSetup setup{.extra_state_mb = 64};
  std::int64_t steps = 400;  // per run; a multiple of setup.every
  int pairs = 15;
};

// Creates the process's dlx::Trial (MPI singleton, checkpoints in <dir>/training).
Result run_training_bench(const TrainingOptions& options);

}  // namespace dlx::bench
