// SPDX-License-Identifier: Apache-2.0
// bench_snapshot_phases: where the code snapshot's time goes, without Slurm: plans and writes the
// snapshot of REPO (the submit directory) into fresh directories under OUT, REPEATS times, and
// prints the median and minimum of each phase (planning: git's listing and the sizes; writing:
// the copy, its sync, code.diff and code.json), then removes what it wrote. bench_snapshot.sh
// times the whole submission; this splits it.
//
//   bench_snapshot_phases REPO OUT [REPEATS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dlx/store/code_snapshot.hpp"

namespace fs = std::filesystem;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void print_phase(const char* name, std::vector<double> times) {
  std::sort(times.begin(), times.end());
  fmt::print("{:<34} median {:.3f} s  min {:.3f} s\n", name, times[times.size() / 2], times.front());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fputs("usage: bench_snapshot_phases REPO OUT [REPEATS]\n", stderr);
    return 2;
  }
  const fs::path repo = fs::absolute(argv[1]);
  const fs::path out = fs::absolute(argv[2]);
  const int repeats = argc > 3 ? std::max(1, std::stoi(argv[3])) : 10;
  std::vector<double> plan_times, write_times, total_times;
  try {
    for (int index = 0; index < repeats; ++index) {
      const fs::path experiment = out / fmt::format("phases-{}", index);
      fs::create_directories(experiment);
      dlx::store::CodeRequest request;
      request.submit_dir = repo;
      request.max_size = std::uint64_t{1} << 30;
      const auto start = std::chrono::steady_clock::now();
      auto plan = dlx::store::plan_code_snapshot(request);
      plan_times.push_back(seconds_since(start));
      if (!plan) {
        fmt::print(stderr, "bench_snapshot_phases: {} is not in a git work tree\n", repo.string());
        return 1;
      }
      const auto write_start = std::chrono::steady_clock::now();
      dlx::store::write_code_snapshot(*plan, experiment);
      write_times.push_back(seconds_since(write_start));
      total_times.push_back(seconds_since(start));
      if (index == 0) fmt::print("{} files, {} bytes\n", plan->files.size(), plan->bytes);
    }
  } catch (const std::exception& error) {
    fmt::print(stderr, "bench_snapshot_phases: {}\n", error.what());
    return 1;
  }
  std::error_code ignored;
  for (int index = 0; index < repeats; ++index) fs::remove_all(out / fmt::format("phases-{}", index), ignored);
  print_phase("plan (listing, sizes)", plan_times);
  print_phase("write (copy, sync, code.json)", write_times);
  print_phase("plan + write", total_times);
  return 0;
}
