// SPDX-License-Identifier: Apache-2.0
#pragma once
// DeviceDownload's plan (device_copy.hpp): a snapshot's device-to-host copies cut into loads of
// at most one pinned piece each, and dealt to the copying threads. Pure arithmetic, apart from
// the CUDA calls that carry it out, so that it is tested on machines without a GPU.
#include <cstddef>
#include <span>
#include <vector>

#include "device_copy.hpp"

namespace dlx::checkpoint::detail {

// One part of a load: `bytes` of a device tensor at `device`, through its piece at `offset`,
// bound for `host`.
struct DownloadPart {
  std::byte* host;
  const std::byte* device;
  std::size_t bytes;
  std::size_t offset;
};

// loads i is parts [starts[i], starts[i + 1]); a large tensor is cut at piece boundaries, small
// ones are packed several to a piece, in the copies' order; no load is empty.
struct DownloadPlan {
  std::vector<DownloadPart> parts;
  std::vector<std::size_t> starts{0};
  std::size_t loads() const { return starts.size() - 1; }
  std::span<const DownloadPart> load(std::size_t index) const {
    return std::span(parts).subspan(starts[index], starts[index + 1] - starts[index]);
  }
};

DownloadPlan plan_download(std::span<const DeviceCopy> copies, std::size_t piece_bytes);

}  // namespace dlx::checkpoint::detail
