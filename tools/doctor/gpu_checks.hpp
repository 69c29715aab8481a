// SPDX-License-Identifier: Apache-2.0
#pragma once
// `dlx doctor`'s look at what the system sampler can read of this host's GPUs (NVML, loaded at
// run time: docs/admin-guide.md, System metrics). GPUs matter on the compute nodes:
// `srun -N1 --gpus=1 dlx doctor --gpus` asks one.
#include <string>
#include <vector>

#include "site_checks.hpp"

namespace dlx::doctor {

struct GpuMetricsFacts {
  std::string why_not;             // why NVML cannot be read here; empty when it can
  std::vector<std::string> gpus;   // what NVML lists (UUIDs)
  bool utilization_samples = false;
  bool process_utilization = false;
  bool process_list = false;
};

// One finding for the GPU series: skipped without a driver or a GPU (a login node), ok with the
// GPUs listed, warn where a read the sampler relies on is missing from this driver.
std::vector<Finding> check_gpu_metrics(const GpuMetricsFacts& facts);

}  // namespace dlx::doctor
