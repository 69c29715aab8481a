// SPDX-License-Identifier: Apache-2.0
#pragma once
// Copies tensors into library-owned host memory: memcpy for host tensors (on a few threads when
// large), device-to-host copies through DeviceDownload's few pinned pieces for device tensors.
// Buffers of `reuse` whose size fits are recycled (no page faults on the next snapshot of the same
// model). Tensors marked snapshot_in_background are left for copy_the_rest(), which a writer runs
// on its own thread after save() has returned.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "device_copy.hpp"
#include "dlx/checkpoint/checkpoint.hpp"
#include "host_copy.hpp"
#include "dlx/checkpoint/tensor.hpp"

namespace dlx::checkpoint::detail {

struct Snapshot {
  std::vector<Tensor> tensors;  // every tensor's buffer; those of `later_*` not yet filled
  std::vector<HostCopy> later_host;
  std::vector<DeviceCopy> later_device;
  bool complete() const { return later_host.empty() && later_device.empty(); }
};

// Validates the views, allocates the snapshot and copies every tensor not marked
// snapshot_in_background; device tensors are copied after `after` (marked when any is present).
Snapshot snapshot_tensors(std::span<const TensorView> views, std::vector<Tensor> reuse,
                          DeviceDownload& download, const StreamPoint& after);
// The copies snapshot_tensors left; then snapshot.complete().
void copy_the_rest(Snapshot& snapshot, DeviceDownload& download, const StreamPoint& after);
// A StreamPoint on `cuda_stream` when `views` hold a device tensor, else an empty one.
StreamPoint mark_if_on_device(std::span<const TensorView> views, void* cuda_stream);

// Throws CheckpointError for an empty or malformed name, a duplicate name, or missing data.
void validate_tensors(std::span<const TensorView> views);

// `name` as a message can show it: each NUL byte as \0 (a raw one would end the message there).
std::string name_for_message(std::string_view name);

// save_checkpoint for tensors that are already host snapshots (checkpoint_save.cpp).
void save_snapshot(const CheckpointContent& content, const std::vector<Tensor>& tensors,
                   const std::filesystem::path& path);

}  // namespace dlx::checkpoint::detail
