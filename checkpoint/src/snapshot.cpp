// SPDX-License-Identifier: Apache-2.0
#include "snapshot.hpp"

#include <algorithm>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "dlx/checkpoint/error.hpp"

namespace dlx::checkpoint::detail {
namespace {

bool valid_name(const std::string& name) {
  // A NUL would end the HDF5 link name early: the tensor would be read back under another name.
  if (name.empty() || name.front() == '/' || name.back() == '/' ||
      name.find('\0') != std::string::npos)
    return false;
  std::size_t begin = 0;
  while (begin <= name.size()) {
    auto end = std::min(name.find('/', begin), name.size());
    auto part = std::string_view(name).substr(begin, end - begin);
    if (part.empty() || part == "." || part == "..") return false;
    begin = end + 1;
  }
  return true;
}

}  // namespace

std::string name_for_message(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '\0') out += "\\0";
    else out += c;
  }
  return out;
}

void validate_tensors(std::span<const TensorView> views) {
  std::set<std::string_view> names;
  for (const auto& view : views) {
    if (!valid_name(view.name))
      throw CheckpointError(fmt::format(
          "tensor name '{}' is not valid (non-empty parts separated by '/', no '.' or '..', no NUL "
          "byte)",
          name_for_message(view.name)));
    if (!names.insert(view.name).second)
      throw CheckpointError(fmt::format("two tensors are named '{}'", view.name));
    if (view.data == nullptr && view.element_count() > 0)
      throw CheckpointError(fmt::format("tensor '{}' has {} elements but no data", view.name,
                                        view.element_count()));
  }
}

StreamPoint mark_if_on_device(std::span<const TensorView> views, void* cuda_stream) {
  const bool any_device = std::any_of(views.begin(), views.end(), [](const TensorView& v) {
    return v.location == MemoryLocation::cuda_device;
  });
  return any_device ? StreamPoint::mark(cuda_stream) : StreamPoint{};
}

Snapshot snapshot_tensors(std::span<const TensorView> views, std::vector<Tensor> reuse,
                          DeviceDownload& download, const StreamPoint& after) {
  validate_tensors(views);
  Snapshot snapshot;
  snapshot.tensors.reserve(views.size());
  std::vector<DeviceCopy> device_now;
  std::vector<HostCopy> host_now;
  for (std::size_t i = 0; i < views.size(); ++i) {
    const auto& view = views[i];
    auto bytes = view.byte_size();
    Tensor tensor{view.name, view.dtype, view.shape, {}};
    // Pageable memory for device tensors too: their bytes come through DeviceDownload's pieces.
    if (i < reuse.size() && reuse[i].bytes.size() == bytes && !reuse[i].bytes.pinned())
      tensor.bytes = std::move(reuse[i].bytes);
    else
      tensor.bytes = HostBuffer::allocate(bytes);
    if (bytes > 0) {
      const bool device = view.location == MemoryLocation::cuda_device;
      if (device)
        (view.snapshot_in_background ? snapshot.later_device : device_now)
            .push_back({tensor.bytes.data(), view.data, bytes});
      else
        (view.snapshot_in_background ? snapshot.later_host : host_now)
            .push_back({tensor.bytes.data(), view.data, bytes});
    }
    snapshot.tensors.push_back(std::move(tensor));
  }
  copy_on_host(host_now);
  download.copy(device_now, after);
  return snapshot;
}

void copy_the_rest(Snapshot& snapshot, DeviceDownload& download, const StreamPoint& after) {
  copy_on_host(snapshot.later_host);
  snapshot.later_host.clear();
  download.copy(snapshot.later_device, after);
  snapshot.later_device.clear();
}

}  // namespace dlx::checkpoint::detail
