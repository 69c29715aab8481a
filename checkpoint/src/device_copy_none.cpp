// SPDX-License-Identifier: Apache-2.0
// device_copy.hpp for a dlx built without CUDA: no pinned memory, device tensors are refused.
#include "device_copy.hpp"

#include "dlx/checkpoint/error.hpp"

namespace dlx::checkpoint::detail {

void* allocate_pinned(std::size_t) noexcept { return nullptr; }
void free_pinned(void*) noexcept {}

namespace {

[[noreturn]] void no_cuda() {
  throw CheckpointError(
      "a tensor is in CUDA device memory but this dlx was built without CUDA "
      "(rebuild with DLX_WITH_CUDA=ON, or copy the tensor to host memory first)");
}

}  // namespace

StreamPoint StreamPoint::mark(void*) { no_cuda(); }
StreamPoint::~StreamPoint() = default;
StreamPoint::StreamPoint(StreamPoint&& other) noexcept : event_(other.event_), device_(other.device_) {}
StreamPoint& StreamPoint::operator=(StreamPoint&& other) noexcept {
  event_ = other.event_;
  device_ = other.device_;
  return *this;
}

struct DeviceDownload::State {};
DeviceDownload::DeviceDownload() = default;
DeviceDownload::~DeviceDownload() = default;
void DeviceDownload::copy(std::span<const DeviceCopy> copies, const StreamPoint&) {
  for (const auto& copy : copies)
    if (copy.bytes > 0) no_cuda();
}

struct DeviceUpload::State {};

DeviceUpload::DeviceUpload(std::size_t, std::size_t) {
  throw DeviceLoadError(
      "load into device memory: this dlx was built without CUDA (rebuild with "
      "DLX_WITH_CUDA=ON, or load into host memory: DLX_TORCH_CUDA_IO=torch for dlx.torch)");
}
DeviceUpload::~DeviceUpload() = default;
std::byte* DeviceUpload::take() { return nullptr; }
void DeviceUpload::send(std::byte*, void*, std::size_t) {}
void DeviceUpload::finish() {}

}  // namespace dlx::checkpoint::detail
