// SPDX-License-Identifier: Apache-2.0
// dlx-launch's system sampler (launcher/launch: process_usage.hpp, system_sampler.hpp) and the
// system log it writes (record/: system_series.hpp), against processes of known load: a child
// that keeps a CPU half busy, one that holds 192 MiB resident in a forked grandchild (the tree,
// not just the trainer), one that writes 48 MiB to storage. Real processes, real /proc; the
// cgroup v2 reader on a cgroup directory's files as the kernel writes them (this machine has no
// cgroup v2 step to read).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <numeric>
#include <thread>
#include <vector>

#include "dlx/launch/process_usage.hpp"
#include "dlx/launch/system_sampler.hpp"
#include "dlx/record/system_series.hpp"
#include "searcher_temp_dir.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using dlx::launch::read_cgroup_usage;
using dlx::launch::read_process_tree_usage;
using dlx::launch::SystemSampler;

namespace {

using Clock = std::chrono::steady_clock;

// Busy for half of every 20 ms, for `seconds`.
[[noreturn]] void half_busy(double seconds) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  volatile std::uint64_t sink = 0;
  while (Clock::now() < end) {
    const auto busy_until = Clock::now() + 10ms;
    while (Clock::now() < busy_until) sink = sink + 1;
    std::this_thread::sleep_for(10ms);
  }
  ::_exit(0);
}

// A grandchild that touches `bytes` and holds them; the child waits for it.
[[noreturn]] void hold_memory_in_grandchild(std::size_t bytes, double seconds) {
  const pid_t grandchild = ::fork();
  if (grandchild == 0) {
    std::vector<char> memory(bytes);
    for (std::size_t i = 0; i < bytes; i += 4096) memory[i] = static_cast<char>(i);
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    ::_exit(memory[4096] == 1 ? 1 : 0);
  }
  int status = 0;
  ::waitpid(grandchild, &status, 0);
  ::_exit(0);
}

[[noreturn]] void write_to_storage(const fs::path& file, std::size_t bytes, double then_seconds) {
  std::this_thread::sleep_for(500ms);  // after the sampler's first sample, which has no rate
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char> block(1 << 20, 'x');
  for (std::size_t done = 0; done < bytes; done += block.size()) {
    if (::write(fd, block.data(), block.size()) < 0) ::_exit(1);
  }
  ::fsync(fd);
  ::close(fd);
  std::this_thread::sleep_for(std::chrono::duration<double>(then_seconds));
  ::_exit(0);
}

template <typename Work>
pid_t spawn(Work work) {
  const pid_t child = ::fork();
  if (child == 0) work();
  return child;
}

int wait_child(pid_t child, double* cpu_seconds = nullptr) {
  int status = 0;
  struct rusage usage{};
  ::wait4(child, &status, 0, &usage);
  if (cpu_seconds != nullptr) {
    *cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                   static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  }
  return status;
}

// Samples `child` every 200 ms until it exits; the series of its log. `cpu_seconds`, when given,
// receives the CPU time the kernel accounted to the child (its own rusage, the ground truth).
dlx::record::MetricTable sample_until_exit(pid_t child, const fs::path& trial_dir, int rank,
                                           double* cpu_seconds = nullptr) {
  {
    auto sampler = SystemSampler::start(child, 200ms, trial_dir, {"node-a", rank, 0}, stderr);
    REQUIRE(sampler);
    wait_child(child, cpu_seconds);
  }
  for (auto& series : dlx::record::load_system_series(trial_dir)) {
    if (series.name.rank == rank) return std::move(series.samples);
  }
  FAIL("no system log for rank " << rank);
  return {};
}

double mean_of(const std::vector<double>& values) {
  return values.empty() ? 0 : std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

}  // namespace

TEST_CASE("a process kept half busy samples at about 50% of a core", "[launcher][system]") {
  dlx::testing::TempDir temp;
  double cpu_seconds = 0;
  const auto samples = sample_until_exit(spawn([] { half_busy(2.5); }), temp.path, 0, &cpu_seconds);
  const auto cpu = samples.series("cpu_percent");
  const auto& times = samples.wall_times();
  REQUIRE(cpu.values.size() >= 8);  // 2.5 s at 5 samples a second, the first without a rate
  REQUIRE(samples.steps().front() == 0);
  INFO("cpu_percent: " << Catch::Detail::stringify(cpu.values) << ", the child's own CPU time "
                       << cpu_seconds << " s");
  // The samples' rates, integrated over their intervals, give back the CPU time the kernel
  // accounted to the child, less what it spent before the first sample and after the last (at
  // most a period at each end). Measured against the child's own rusage, not against 50%: on a
  // loaded machine (CI runs fuzzing beside the tests) the child gets less than half a core, and
  // the sampler must say so.
  double sampled_seconds = 0;
  for (std::size_t i = 0; i < cpu.values.size(); ++i) {
    const auto row = static_cast<std::size_t>(cpu.steps[i]);  // steps number the rows from 0
    REQUIRE(row >= 1);
    sampled_seconds += cpu.values[i] / 100.0 * (times[row] - times[row - 1]);
  }
  INFO("integrated from the samples: " << sampled_seconds << " s");
  // It ran (under a full CI run beside it, it got 0.15 s of the 1.25 s it asks for).
  CHECK(cpu_seconds > 0.05);
  CHECK(sampled_seconds <= cpu_seconds * 1.05 + 0.02);
  CHECK(sampled_seconds >= cpu_seconds - 2 * 0.2 - 0.1);
  // The child never uses more than the half it asks for, however idle the machine.
  const std::vector<double> middle(cpu.values.begin() + 1, cpu.values.end() - 2);
  CHECK(mean_of(middle) < 65);
  CHECK(samples.series("processes").values.front() == 1);
  // Steps number the samples; wall times increase by about the period.
  const auto& steps = samples.steps();
  CHECK(steps.front() == 0);
  CHECK(steps.back() == static_cast<std::int64_t>(steps.size()) - 1);
  CHECK(times.back() - times.front() > 2.0);
}

TEST_CASE("a grandchild's memory counts in the trainer's tree", "[launcher][system]") {
  dlx::testing::TempDir temp;
  constexpr std::size_t kBytes = std::size_t{192} << 20;
  const auto samples = sample_until_exit(spawn([] { hold_memory_in_grandchild(kBytes, 1.5); }), temp.path, 1);
  const auto memory = samples.series("memory_bytes");
  REQUIRE_FALSE(memory.values.empty());
  const double peak = *std::max_element(memory.values.begin(), memory.values.end());
  INFO("memory_bytes: " << Catch::Detail::stringify(memory.values));
  CHECK(peak > 0.95 * static_cast<double>(kBytes));
  CHECK(peak < 1.3 * static_cast<double>(kBytes));
  const auto processes = samples.series("processes");
  CHECK(*std::max_element(processes.values.begin(), processes.values.end()) == 2);
}

TEST_CASE("bytes written to storage add up to what was written", "[launcher][system]") {
  dlx::testing::TempDir temp;
  constexpr std::size_t kBytes = std::size_t{48} << 20;
  const fs::path file = temp.path / "written.bin";
  const auto samples = sample_until_exit(spawn([&] { write_to_storage(file, kBytes, 1.0); }), temp.path, 2);
  // The rates times the intervals between samples: the bytes written while sampled.
  // Row r + 1 holds the rate over the interval from row r (the first row has none).
  const auto rates = samples.series("write_bytes_per_s");
  const auto& times = samples.wall_times();
  REQUIRE(rates.values.size() + 1 == times.size());
  double written = 0;
  for (std::size_t i = 0; i < rates.values.size(); ++i) written += rates.values[i] * (times[i + 1] - times[i]);
  // /proc/<pid>/io counts bytes as they are dirtied.
  INFO("write_bytes_per_s: " << Catch::Detail::stringify(rates.values));
  CHECK(written > 0.6 * static_cast<double>(kBytes));
  CHECK(written < 1.2 * static_cast<double>(kBytes));
}

TEST_CASE("a sampler of a trainer that is gone writes nothing and ends", "[launcher][system]") {
  dlx::testing::TempDir temp;
  const pid_t child = spawn([] { ::_exit(0); });
  wait_child(child);
  CHECK_FALSE(read_process_tree_usage(child));
  { auto sampler = SystemSampler::start(child, 100ms, temp.path, {"node-a", 0, 0}, stderr); }
  const auto all = dlx::record::load_system_series(temp.path);
  REQUIRE(all.size() == 1);
  CHECK(all[0].samples.empty());
}

TEST_CASE("the cgroup v2 files of a Slurm step", "[launcher][system]") {
  dlx::testing::TempDir temp;
  const fs::path step = temp.path / "system.slice" / "slurmstepd.scope" / "job_12" / "step_0" / "user" / "task_1";
  fs::create_directories(step);
  std::ofstream(step / "cpu.stat") << "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n";
  std::ofstream(step / "memory.current") << "104857600\n";
  std::ofstream(step / "memory.peak") << "209715200\n";
  std::ofstream(step / "io.stat") << "8:0 rbytes=1000 wbytes=4096 rios=1 wios=1 dbytes=0 dios=0\n"
                                     "259:0 rbytes=24 wbytes=4 rios=1 wios=1 dbytes=0 dios=0\n";
  const auto usage = read_cgroup_usage(step);
  REQUIRE(usage);
  CHECK(usage->cpu_seconds == 2.5);
  CHECK(usage->memory_bytes == 104857600u);
  CHECK(usage->memory_peak_bytes == 209715200u);
  CHECK(usage->read_bytes == 1024u);
  CHECK(usage->write_bytes == 4100u);
  CHECK_FALSE(usage->processes);
  CHECK_FALSE(read_cgroup_usage(temp.path / "gone"));

  // Which cgroup a process is in: a step's is used, the node's or a login session's is not.
  const fs::path proc = temp.path / "proc";
  fs::create_directories(proc / "42");
  fs::create_directories(proc / "43");
  std::ofstream(proc / "42" / "cgroup") << "0::/system.slice/slurmstepd.scope/job_12/step_0/user/task_1\n";
  std::ofstream(proc / "43" / "cgroup") << "0::/user.slice/user-1000.slice/session-3.scope\n";
  CHECK(dlx::launch::step_cgroup_of(42, proc, temp.path) == step);
  CHECK_FALSE(dlx::launch::step_cgroup_of(43, proc, temp.path));
  CHECK_FALSE(dlx::launch::step_cgroup_of(44, proc, temp.path));
}

TEST_CASE("a long run's samples go to parts, joined again by the reader", "[record][system]") {
  dlx::testing::TempDir temp;
  const auto rows = dlx::record::kSystemRowsPerPart * 2 + 5;
  {
    dlx::record::SystemLogWriter first_run(temp.path, {"n1", 0, 0});
    first_run.append(1.0, {{"cpu_percent", 10}});
    dlx::record::SystemLogWriter writer(temp.path, {"n1", 0, 1});
    for (std::int64_t i = 0; i < rows; ++i) writer.append(100.0 + static_cast<double>(i), {{"cpu_percent", static_cast<double>(i)}});
  }
  CHECK(fs::exists(temp.path / "system" / "n1.rank-0.attempt-1.2.log"));
  const auto all = dlx::record::load_system_series(temp.path);
  REQUIRE(all.size() == 2);
  CHECK(all[0].name.attempt == 0);
  CHECK(all[1].samples.rows() == static_cast<std::size_t>(rows));
  CHECK(all[1].samples.steps().back() == rows - 1);
  CHECK(all[1].samples.last("cpu_percent") == static_cast<double>(rows - 1));
  // What dlx status reads: the latest run's last part only.
  const auto latest = dlx::record::load_latest_system_samples(temp.path);
  REQUIRE(latest.size() == 1);
  CHECK(latest[0].name.part == 2);
  CHECK(latest[0].samples.rows() == 5);
  CHECK(latest[0].samples.last("cpu_percent") == static_cast<double>(rows - 1));
}

TEST_CASE("system log names carry node, rank and attempt, and refuse what cannot name a file",
          "[record][system]") {
  using dlx::record::parse_system_log_file_name;
  using dlx::record::system_log_file_name;
  CHECK(system_log_file_name({"gpu-node.cluster", 3, 2, 7}) == "gpu-node.cluster.rank-3.attempt-2.7.log");
  CHECK(parse_system_log_file_name("gpu-node.cluster.rank-3.attempt-2.7.log") ==
        dlx::record::SystemLogName{"gpu-node.cluster", 3, 2, 7});
  CHECK_FALSE(system_log_file_name({"a/b", 0, 0}));
  CHECK_FALSE(system_log_file_name({".hidden", 0, 0}));
  CHECK_FALSE(system_log_file_name({"", 0, 0}));
  CHECK_FALSE(system_log_file_name({std::string(300, 'n'), 0, 0}));
  CHECK_FALSE(parse_system_log_file_name("node.rank-1.attempt-x.0.log"));
  CHECK_FALSE(parse_system_log_file_name("node.rank-01.attempt-0.0.log"));
  CHECK_FALSE(parse_system_log_file_name("node.rank-1.attempt-0.log"));
  CHECK_FALSE(parse_system_log_file_name("metrics.1.log"));
}
