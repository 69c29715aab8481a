// SPDX-License-Identifier: Apache-2.0
#pragma once
// A fusion bucket of device tensors packed into (and unpacked from) one device buffer by one
// kernel launch on a stream (copy_segments.hpp): packing 100 small gradients costs one launch,
// not 100 copies. Only for the NCCL backend (built with CUDA).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <cuda_runtime_api.h>

#include "copy_segments.hpp"
#include "dlx/comm/tensor.hpp"

namespace dlx::comm::detail {

class DeviceBucketCopier {
 public:
  // Enqueues the copies on `stream` and returns the runtime's result; nothing is waited for.
  // Empty tensors are skipped (they may have no storage).
  cudaError_t pack(std::span<const Tensor> tensors, std::byte* bucket, cudaStream_t stream);
  cudaError_t unpack(const std::byte* bucket, std::span<const Tensor> tensors, cudaStream_t stream);
  std::uint64_t batches() const noexcept { return launches_; }  // copy launches so far

 private:
  std::vector<CopySegment> segments_;  // the table being built, reused from call to call
  std::uint64_t launches_ = 0;
};

}  // namespace dlx::comm::detail
