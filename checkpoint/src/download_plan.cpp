// SPDX-License-Identifier: Apache-2.0
#include "download_plan.hpp"

#include <algorithm>

namespace dlx::checkpoint::detail {

DownloadPlan plan_download(std::span<const DeviceCopy> copies, std::size_t piece_bytes) {
  DownloadPlan plan;
  std::size_t filled = 0;
  for (const auto& copy : copies) {
    auto* host = static_cast<std::byte*>(copy.host);
    const auto* device = static_cast<const std::byte*>(copy.device);
    for (std::size_t done = 0; done < copy.bytes;) {
      if (filled == piece_bytes) {
        plan.starts.push_back(plan.parts.size());
        filled = 0;
      }
      const auto take = std::min(copy.bytes - done, piece_bytes - filled);
      plan.parts.push_back({host + done, device + done, take, filled});
      filled += take;
      done += take;
    }
  }
  if (filled > 0) plan.starts.push_back(plan.parts.size());
  return plan;
}

}  // namespace dlx::checkpoint::detail
