// SPDX-License-Identifier: Apache-2.0
#pragma once
// bench_checkpoint's I/O part: save_checkpoint against POSIX write+fsync, load_checkpoint against
// a POSIX read (both cold), and the async writer's stall against a synchronous save.
#include <cstddef>
#include <filesystem>
#include <vector>

#include "bench_stats.hpp"

namespace dlx::bench {

struct IoOptions {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "dlx-bench-checkpoint";
  std::size_t mib = 1024;
  int rounds = 7;
};

// save_vs_posix_write, load_vs_posix_read, async_stall_vs_sync.
std::vector<Result> run_io_bench(const IoOptions& options);

}  // namespace dlx::bench
