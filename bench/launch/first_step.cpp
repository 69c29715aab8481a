// SPDX-License-Identifier: Apache-2.0
// bench_first_step: the smallest libdlx trainer. Under `srun --mpi=pmix dlx-launch` it does what
// every trainer does before its first step (dlx-launch's checks and searcher question, MPI
// bring-up, the start-up check, the communicator, the trial record), then one allreduce as its
// first training step; rank 0 prints the wall-clock time at that moment for bench_startup.sh.
#include <chrono>
#include <cstdio>
#include <span>
#include <vector>

#include "dlx/trial.hpp"

int main() {
  dlx::Trial trial;
  std::vector<float> gradient(1024, 1.0F);
  std::vector<dlx::comm::Tensor> gradients{dlx::comm::Tensor::of(std::span<float>(gradient))};
  trial.allreduce(gradients);
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  if (trial.rank() == 0) {
    std::printf("first_step_unix_ns %lld\n",
                static_cast<long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()));
    std::fflush(stdout);
  }
  trial.finish();
  return 0;
}
