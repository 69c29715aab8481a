// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/system_sampler.hpp"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <map>
#include <string>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "dlx/record/error.hpp"

namespace dlx::launch {

namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A counter's growth per second; 0 when it went down (a process whose I/O counted exited).
double rate(std::optional<std::uint64_t> now, std::optional<std::uint64_t> before, double seconds) {
  if (!now || !before || *now < *before || seconds <= 0) return 0;
  return static_cast<double>(*now - *before) / seconds;
}

// The GPUs to sample, or nullptr: none on this node (said when the trial asked for GPUs; a trial
// that did not may still use a GPU it can see, so NVML is tried quietly then).
std::unique_ptr<GpuUsage> open_gpus(const SamplerGpus& gpus, std::FILE* log) {
  std::string why;
  auto usage = GpuUsage::open(gpus.visible, why);
  if (!usage && log && (gpus.expected || !gpus.visible.empty())) {
    fmt::print(log, "dlx-launch: no GPU metrics for this run: {}\n", why);
  }
  return usage;
}

}  // namespace

SystemSampler::SystemSampler(pid_t trainer, std::chrono::milliseconds period, record::SystemLogWriter writer,
                             std::optional<std::filesystem::path> cgroup, SamplerGpus gpus, std::FILE* log)
    : trainer_(trainer), period_(period), writer_(std::move(writer)), cgroup_(std::move(cgroup)),
      gpu_choice_(std::move(gpus)), log_(log) {
  // The thread takes no signal: dlx-launch's main thread forwards the notices to the trainer and
  // waits for its SIGCHLD (child_process.hpp).
  sigset_t all, previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  thread_ = std::thread([this] { run(); });
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

SystemSampler::~SystemSampler() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  // The trainer has exited: a cgroup's counters are final now (a process tree is gone).
  if (cgroup_) sample();
}

std::unique_ptr<SystemSampler> SystemSampler::start(pid_t trainer, std::chrono::milliseconds period,
                                                    const std::filesystem::path& trial_dir,
                                                    const record::SystemLogName& name, std::FILE* log,
                                                    const SamplerGpus& gpus) {
  try {
    // The first attempt number without a log: a crash restart in the same allocation keeps the
    // trial's restart count.
    record::SystemLogName free = name;
    for (int tries = 0;; ++tries, ++free.attempt) {
      try {
        record::SystemLogWriter writer(trial_dir, free);
        return std::make_unique<SystemSampler>(trainer, period, std::move(writer), step_cgroup_of(trainer), gpus, log);
      } catch (const record::RecordError&) {
        const auto file = record::system_log_file_name(free);
        std::error_code error;
        if (tries == 100 || !file ||
            !std::filesystem::exists(trial_dir / record::kSystemDirName / *file, error)) {
          throw;
        }
      }
    }
  } catch (const std::exception& e) {
    if (log) fmt::print(log, "dlx-launch: no system metrics for this run: {}\n", e.what());
    return nullptr;
  }
}

void SystemSampler::run() {
  // Named, so that top -H, gdb and the overhead benchmark (bench/launch) tell it apart.
  ::pthread_setname_np(::pthread_self(), "dlx-sampler");
  gpus_ = open_gpus(gpu_choice_, log_);
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    sample();
    lock.lock();
    wake_.wait_for(lock, period_, [this] { return stopping_; });
  }
}

void SystemSampler::sample() {
  if (failed_) return;
  const auto now = std::chrono::steady_clock::now();
  const auto counters = cgroup_ ? read_cgroup_usage(*cgroup_) : read_process_tree_usage(trainer_);
  if (!counters) return;  // the trainer (or its cgroup) is gone
  std::map<std::string, double> values;
  if (counters->memory_bytes) values["memory_bytes"] = static_cast<double>(*counters->memory_bytes);
  if (counters->memory_peak_bytes) values["memory_peak_bytes"] = static_cast<double>(*counters->memory_peak_bytes);
  if (counters->processes) values["processes"] = *counters->processes;
  if (last_) {
    // Rates over the interval since the last sample: the first sample has none.
    const double seconds = std::chrono::duration<double>(now - last_time_).count();
    values["cpu_percent"] = seconds > 0 ? std::max(0.0, counters->cpu_seconds - last_->cpu_seconds) / seconds * 100 : 0;
    if (counters->read_bytes) values["read_bytes_per_s"] = rate(counters->read_bytes, last_->read_bytes, seconds);
    if (counters->write_bytes) values["write_bytes_per_s"] = rate(counters->write_bytes, last_->write_bytes, seconds);
  }
  if (gpus_) add_gpu_series(values, gpus_->sample(trainer_processes(trainer_, cgroup_)));
  last_ = counters;
  last_time_ = now;
  try {
    writer_.append(unix_now(), values);
  } catch (const std::exception& e) {
    // A full or failing disk: the trial goes on without system metrics (said once).
    fmt::print(stderr, "dlx-launch: system metrics stopped: {}\n", e.what());
    failed_ = true;
  }
}

}  // namespace dlx::launch
