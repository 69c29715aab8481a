// SPDX-License-Identifier: Apache-2.0
// bench_system_sample: the cost of one sample of dlx-launch's system sampler (launcher/launch:
// process_usage.hpp, system_sampler.hpp) for a trainer shaped like a real one: a process with 32
// threads (PyTorch's pools) and 4 forked children (DataLoader workers). Timed on the sampler's own
// thread, which is not the training thread: its CPU time per sample (the /proc reads) and the
// append + fdatasync of the row to the system log, in a directory given (a node-local or the
// shared file system). Results: docs/benchmarks.md, section System metrics.
//
//   bench_system_sample [DIR] [--samples N]
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "dlx/launch/process_usage.hpp"
#include "dlx/record/system_series.hpp"

namespace {

double thread_cpu_seconds() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

// A trainer-shaped tree that sleeps until killed.
pid_t start_tree() {
  const pid_t trainer = ::fork();
  if (trainer != 0) return trainer;
  ::setpgid(0, 0);  // its own group: the bench ends the whole tree with one kill
  for (int i = 0; i < 4; ++i) {
    if (::fork() == 0) {
      ::pause();
      ::_exit(0);
    }
  }
  std::vector<std::thread> pool;
  for (int i = 0; i < 32; ++i) pool.emplace_back([] { ::pause(); });
  ::pause();
  ::_exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path dir = std::filesystem::temp_directory_path();
  int samples = 2000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--samples") == 0 && i + 1 < argc) samples = std::atoi(argv[++i]);
    else dir = argv[i];
  }
  const pid_t trainer = start_tree();
  ::setpgid(trainer, trainer);  // as the child does: whichever runs first  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // its threads and children exist

  const double cpu_start = thread_cpu_seconds();
  const auto wall_start = std::chrono::steady_clock::now();
  int processes = 0;
  for (int i = 0; i < samples; ++i) processes = dlx::launch::read_process_tree_usage(trainer)->processes.value_or(0);
  const double read_cpu_us = (thread_cpu_seconds() - cpu_start) / samples * 1e6;
  const double read_wall_us =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count() / samples * 1e6;

  const auto trial_dir = dir / fmt::format("dlx-bench-system-{}", ::getpid());
  std::filesystem::create_directories(trial_dir);
  const int appends = std::max(1, samples / 10);
  double append_cpu_us = 0, append_wall_us = 0;
  {
    dlx::record::SystemLogWriter writer(trial_dir, {"bench", 0, 0});
    const double append_cpu_start = thread_cpu_seconds();
    const auto append_start = std::chrono::steady_clock::now();
    for (int i = 0; i < appends; ++i) {
      writer.append(1.0 * i, {{"cpu_percent", 99.5}, {"memory_bytes", 1e9}, {"processes", 5},
                              {"read_bytes_per_s", 1e6}, {"write_bytes_per_s", 2e6}});
    }
    append_cpu_us = (thread_cpu_seconds() - append_cpu_start) / appends * 1e6;
    append_wall_us =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - append_start).count() / appends * 1e6;
  }
  std::filesystem::remove_all(trial_dir);
  ::kill(-trainer, SIGKILL);
  ::waitpid(trainer, nullptr, 0);

  fmt::print("# tree: {} processes (the trainer with 32 threads and 4 children); {} samples, {} appends in {}\n",
             processes, samples, appends, dir.string());
  fmt::print("# read /proc: {:.1f} us CPU, {:.1f} us wall per sample\n", read_cpu_us, read_wall_us);
  fmt::print("# append + fdatasync: {:.1f} us CPU, {:.1f} us wall per sample\n", append_cpu_us, append_wall_us);
  fmt::print("# result: system_sample_cpu_us {:.1f} (the sampler's CPU per sample)\n", read_cpu_us + append_cpu_us);
  fmt::print("# result: sampler_core_share_at_1s {:.5f} (target <= 0.005 of one core)\n",
             (read_cpu_us + append_cpu_us) / 1e6);
  return 0;
}
