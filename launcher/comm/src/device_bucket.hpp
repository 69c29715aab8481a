// SPDX-License-Identifier: Apache-2.0
#pragma once
// A fusion bucket of device tensors packed into (and unpacked from) one device buffer with one
// batched copy on a stream: cudaMemcpyBatchAsync (CUDA 12.8+) takes the whole list in one call,
// so packing 100 small gradients costs one launch, not 100. Older runtimes fall back to one
// cudaMemcpyAsync per tensor. Only for the NCCL backend (built with CUDA).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <cuda_runtime_api.h>

#include "dlx/comm/tensor.hpp"

namespace dlx::comm::detail {

class DeviceBucketCopier {
 public:
  // Enqueues the copies on `stream` (never the legacy default stream) and returns the runtime's
  // result; nothing is waited for. Empty tensors are skipped (they may have no storage).
  cudaError_t pack(std::span<const Tensor> tensors, std::byte* bucket, cudaStream_t stream);
  cudaError_t unpack(const std::byte* bucket, std::span<const Tensor> tensors, cudaStream_t stream);
  std::uint64_t batches() const noexcept { return batches_; }  // copy launches so far

 private:
  cudaError_t copy(cudaStream_t stream);

  // The batch being built, reused from call to call (read by the runtime during the call).
  std::vector<void*> destinations_;
  std::vector<const void*> sources_;
  std::vector<std::size_t> sizes_;
  std::uint64_t batches_ = 0;
};

}  // namespace dlx::comm::detail
