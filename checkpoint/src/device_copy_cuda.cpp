// device_copy.hpp through the CUDA runtime (CUDA::cudart only, never the driver library).
#include <cuda_runtime.h>

#include <fmt/format.h>

#include "device_copy.hpp"
#include "dlx/checkpoint/error.hpp"

namespace dlx::checkpoint::detail {
namespace {

void check_cuda(cudaError_t result, const char* call, const char* file, int line) {
  if (result != cudaSuccess)
    throw CheckpointError(fmt::format("snapshot of device tensors: {} failed at {}:{}: {} ({})",
                                      call, file, line, cudaGetErrorString(result),
                                      cudaGetErrorName(result)));
}

#define DLX_CUDA_CHECK(call) check_cuda((call), #call, __FILE__, __LINE__)

// Destroys the stream on every path out of copy_from_device.
struct Stream {
  cudaStream_t id = nullptr;
  ~Stream() {
    if (id != nullptr) cudaStreamDestroy(id);
  }
};

}  // namespace

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
  DLX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream.id, cudaStreamNonBlocking));
  for (const auto& copy : copies)
    DLX_CUDA_CHECK(cudaMemcpyAsync(copy.host, copy.device, copy.bytes, cudaMemcpyDeviceToHost,
                                   stream.id));
  DLX_CUDA_CHECK(cudaStreamSynchronize(stream.id));
}

}  // namespace dlx::checkpoint::detail
