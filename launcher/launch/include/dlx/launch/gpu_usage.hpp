// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a trial uses of its GPUs, for the system sampler (system_sampler.hpp), read through NVML
// loaded at run time (no build or run dependency on a driver: without one there are no GPU
// series, said once).
//
// Which devices are the trial's: those CUDA_VISIBLE_DEVICES (or Slurm's GPU list) names, by UUID
// ("GPU-...") or NVML index (Slurm's cgroup hides the other GPUs, so the indexes of a step's GPUs
// are 0..n-1 in both numberings), series k being the trainer's cuda:k; where nothing names them,
// or a name matches no device, the devices on which a trainer process holds a CUDA context, in
// the order they appear. A node's other GPUs are never sampled.
//
// Per device k and interval (the series docs/file-format.md lists):
//   gpu<k>_util_percent, _util_min_percent, _util_max_percent
//       the share of time a kernel ran, device-wide: the mean, least and most of the driver's
//       own samples in the interval (it takes one every 1/6 s to 1 s), not one instant's reading
//   gpu<k>_trial_sm_percent    the trial's processes' share of the SMs (their per-process
//                              samples; shows a neighbour's load apart when trials share a GPU)
//   gpu<k>_memory_bytes        GPU memory held by the trial's processes
//   gpu<k>_device_memory_bytes GPU memory in use on the device, by anyone
//   gpu<k>_memory_total_bytes  the device's memory
//   gpu<k>_power_watts, gpu<k>_sm_clock_mhz
// A figure the driver does not give (a product without it, a process list hidden) is left out.
// PCIe throughput is not sampled: NVML measures it over a 20 ms window per direction, blocking
// the sampler 41 ms and costing 0.9 ms of CPU for an instant's figure, not the interval's (an
// H200: docs/benchmarks.md, GPU); with it the sampler would exceed its 0.5% of a core.
#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dlx::launch {

namespace nvml {
struct Api;
}

struct GpuSample {
  std::optional<double> util_mean, util_min, util_max, trial_sm_percent;
  std::optional<double> memory_bytes, device_memory_bytes, memory_total_bytes;
  std::optional<double> power_watts, sm_clock_mhz;
};

// The least, mean and most of the samples (timestamp in µs, value) newer than `after_us`, and the
// newest timestamp; nullopt when there is none.
struct IntervalStats {
  double min = 0, mean = 0, max = 0;
  unsigned long long newest_us = 0;
};
std::optional<IntervalStats> interval_stats(const std::vector<std::pair<unsigned long long, double>>& samples,
                                            unsigned long long after_us);

// The NVML indexes of the devices `visible` names (UUIDs or indexes), in its order, given every
// device's UUID in NVML's order; nullopt when `visible` is empty or one of its entries matches no
// device (then the sampler follows the trainer's processes).
std::optional<std::vector<unsigned>> devices_named(const std::vector<std::string>& visible,
                                                   const std::vector<std::string>& uuids);

// Adds one rank's devices' series ("gpu0_util_percent", ...) to `values`.
void add_gpu_series(std::map<std::string, double>& values, const std::vector<GpuSample>& devices);

// What NVML says of this host, for `dlx doctor`: why it cannot be read (empty: it can), its GPUs'
// UUIDs in NVML's order, and which of the sampler's optional reads this driver has.
struct GpuHostFacts {
  std::string why_not;
  std::vector<std::string> uuids;
  bool utilization_samples = false;  // gpu<k>_util_min/max_percent, an interval's mean
  bool process_utilization = false;  // gpu<k>_trial_sm_percent
  bool process_list = false;         // gpu<k>_memory_bytes, and finding a GPU by the trainer's context
};
GpuHostFacts gpu_host_facts();

class GpuUsage {
 public:
  // nullptr with `why` set when NVML cannot be loaded or sees no GPU.
  static std::unique_ptr<GpuUsage> open(const std::vector<std::string>& visible, std::string& why);
  GpuUsage(std::shared_ptr<const nvml::Api> api, std::vector<std::string> visible, std::string& why);
  ~GpuUsage();
  GpuUsage(const GpuUsage&) = delete;
  GpuUsage& operator=(const GpuUsage&) = delete;

  // One sample of each of the trial's devices over the interval since the last call. `trial`:
  // the trainer's processes (host PIDs, as NVML gives them).
  std::vector<GpuSample> sample(const std::vector<pid_t>& trial);

 private:
  struct Device;
  void follow_processes(const std::vector<pid_t>& trial);
  std::optional<std::vector<std::pair<pid_t, unsigned long long>>> process_list(void* handle) const;
  GpuSample read(Device& device, const std::vector<pid_t>& trial) const;

  std::shared_ptr<const nvml::Api> api_;
  std::vector<std::unique_ptr<Device>> devices_;  // every device NVML sees, in its order
  std::vector<unsigned> chosen_;                  // the trial's, as series 0, 1, ...
  bool named_ = false;                            // chosen_ from the visible list, fixed
};

}  // namespace dlx::launch
