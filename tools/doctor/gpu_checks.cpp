// SPDX-License-Identifier: Apache-2.0
#include "gpu_checks.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dlx::doctor {

std::vector<Finding> check_gpu_metrics(const GpuMetricsFacts& facts) {
  const std::string check = "GPU metrics";
  if (!facts.why_not.empty()) {
    // A library that loads but is not the NVML dlx reads is a broken install; no library, or no
    // GPU, is a host without GPUs.
    if (facts.why_not.find("lacks the NVML functions") != std::string::npos) {
      return {{Verdict::warn, check, facts.why_not,
               "trials on this node run without GPU series: reinstall the NVIDIA driver's libnvidia-ml.so.1"}};
    }
    return {{Verdict::skipped, check, fmt::format("{} (ask a GPU node: srun -N1 --gpus=1 dlx doctor --gpus)", facts.why_not),
             ""}};
  }
  if (facts.gpus.empty()) {
    return {{Verdict::skipped, check, "NVML loads but lists no GPU this user may open", ""}};
  }
  std::vector<std::string> missing;
  if (!facts.utilization_samples) missing.push_back("utilisation samples (min/max per interval)");
  if (!facts.process_utilization) missing.push_back("per-process utilisation (a trial's own share of a shared GPU)");
  if (!facts.process_list) missing.push_back("the compute process list (a trial's own GPU memory)");
  const auto found = fmt::format("NVML reads {} GPU{}: {}", facts.gpus.size(), facts.gpus.size() == 1 ? "" : "s",
                                 fmt::join(facts.gpus, ", "));
  if (!missing.empty()) {
    return {{Verdict::warn, check, fmt::format("{}; this driver lacks {}", found, fmt::join(missing, "; ")),
             "those series are left out of trials on this node; a newer NVIDIA driver has them"}};
  }
  return {{Verdict::ok, check, found, ""}};
}

}  // namespace dlx::doctor
