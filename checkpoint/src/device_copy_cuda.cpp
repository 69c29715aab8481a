// SPDX-License-Identifier: Apache-2.0
// device_copy.hpp through the CUDA runtime (CUDA::cudart only, never the driver library).
#include <cuda_runtime.h>

#include <fmt/format.h>

#include "device_copy.hpp"
#include "dlx/checkpoint/error.hpp"
#include "dlx/common/cuda_check.hpp"

namespace dlx::checkpoint::detail {
namespace {

// DLX_CUDA_CHECK's handler here: the failed call, where, and the runtime's text and name.
[[noreturn]] void snapshot_failed(const CudaFailure& failure) {
  throw CheckpointError(fmt::format("snapshot of device tensors: {} failed at {}:{}: {} ({})", failure.call,
                                    failure.file, failure.line, cudaGetErrorString(failure.error),
                                    cudaGetErrorName(failure.error)));
}

// Destroys the stream on every path out of copy_from_device.
struct Stream {
  cudaStream_t id = nullptr;
  ~Stream() {
    if (id != nullptr) cudaStreamDestroy(id);
  }
};

}  // namespace

}  // namespace dlx::checkpoint::detail

namespace dlx::checkpoint {

void wait_for_cuda_stream(void* stream) {
  DLX_CUDA_CHECK(detail::snapshot_failed, cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}

}  // namespace dlx::checkpoint

namespace dlx::checkpoint::detail {

void* allocate_pinned(std::size_t bytes) noexcept {
  void* pointer = nullptr;
  if (cudaHostAlloc(&pointer, bytes, cudaHostAllocDefault) != cudaSuccess) {
    cudaGetLastError();  // no driver or no GPU: the caller falls back to pageable memory
    return nullptr;
  }
  return pointer;
}

void free_pinned(void* pointer) noexcept {
  if (pointer != nullptr) cudaFreeHost(pointer);
}

void copy_from_device(std::span<const DeviceCopy> copies) {
  if (copies.empty()) return;
  Stream stream;
  DLX_CUDA_CHECK(snapshot_failed, cudaStreamCreateWithFlags(&stream.id, cudaStreamNonBlocking));
  for (const auto& copy : copies)
    DLX_CUDA_CHECK(snapshot_failed,
                   cudaMemcpyAsync(copy.host, copy.device, copy.bytes, cudaMemcpyDeviceToHost, stream.id));
  DLX_CUDA_CHECK(snapshot_failed, cudaStreamSynchronize(stream.id));
}

}  // namespace dlx::checkpoint::detail
