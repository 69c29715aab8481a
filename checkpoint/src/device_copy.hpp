// SPDX-License-Identifier: Apache-2.0
#pragma once
// The CUDA runtime calls the library needs (pinned memory, device-to-host copies). Built from
// device_copy_cuda.cpp when CMake found CUDA, else from device_copy_none.cpp, which reports that
// this dlx was built without CUDA.
#include <cstddef>
#include <span>

namespace dlx::checkpoint::detail {

struct DeviceCopy {
  void* host;
  const void* device;
  std::size_t bytes;
};

// Page-locked host memory, or nullptr when CUDA is unavailable (no runtime, no driver, no GPU).
void* allocate_pinned(std::size_t bytes) noexcept;
void free_pinned(void* pointer) noexcept;

// Issues every copy on one stream and waits for all of them; throws CheckpointError.
void copy_from_device(std::span<const DeviceCopy> copies);

}  // namespace dlx::checkpoint::detail
