// SPDX-License-Identifier: Apache-2.0
#pragma once
// dlx-launch's sampler of what its trainer uses (process_usage.hpp), every `period` seconds from
// the trainer's start to its exit, into this rank's system log (dlx/record/system_series.hpp).
// It runs on a thread of dlx-launch, not of the trainer: the training thread does no I/O for it
// and shares no lock with it; its cost is a few small /proc or cgroup reads and one fdatasync per
// sample (bench/launch: system_sampler overhead in docs/benchmarks.md), and a few NVML calls per
// GPU where the trainer has GPUs (bench/gpu: gpu_sample_cost).
#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>
#include <thread>

#include "dlx/launch/gpu_usage.hpp"
#include "dlx/launch/process_usage.hpp"
#include "dlx/record/system_series.hpp"

namespace dlx::launch {

// What to sample besides the processes: the GPUs the trainer may use (gpu_usage.hpp), and
// whether the trial asked for any (then a node without NVML is said, once).
struct SamplerGpus {
  std::vector<std::string> visible;  // CUDA_VISIBLE_DEVICES / Slurm's list, as given
  bool expected = false;
};

class SystemSampler {
 public:
  // Starts sampling `trainer` (a sample right away, then one per period). `cgroup`: the step's
  // cgroup to read instead of the process tree (step_cgroup_of).
  SystemSampler(pid_t trainer, std::chrono::milliseconds period, record::SystemLogWriter writer,
                std::optional<std::filesystem::path> cgroup, SamplerGpus gpus = {}, std::FILE* log = nullptr);
  // Takes a last sample (the trainer has exited: its cgroup's counters are final) and stops.
  ~SystemSampler();
  SystemSampler(const SystemSampler&) = delete;
  SystemSampler& operator=(const SystemSampler&) = delete;

  // Starts one for this rank's run, or says (once, to `log`) why it cannot and returns nullptr:
  // sampling must never stop a trial.
  static std::unique_ptr<SystemSampler> start(pid_t trainer, std::chrono::milliseconds period,
                                              const std::filesystem::path& trial_dir, const record::SystemLogName& name,
                                              std::FILE* log, const SamplerGpus& gpus = {});

 private:
  void run();
  void sample();

  pid_t trainer_;
  std::chrono::milliseconds period_;
  record::SystemLogWriter writer_;
  std::optional<std::filesystem::path> cgroup_;
  // NVML is loaded on the sampler's thread, before its first sample: starting the driver can
  // take seconds on a node without persistence mode, and dlx-launch's own thread must not wait.
  SamplerGpus gpu_choice_;
  std::FILE* log_ = nullptr;
  std::unique_ptr<GpuUsage> gpus_;
  std::optional<UsageCounters> last_;
  std::chrono::steady_clock::time_point last_time_;
  bool failed_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dlx::launch
