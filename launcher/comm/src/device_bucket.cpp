// SPDX-License-Identifier: Apache-2.0
#include "device_bucket.hpp"

namespace dlx::comm::detail {

cudaError_t DeviceBucketCopier::pack(std::span<const Tensor> tensors, std::byte* bucket,
                                     cudaStream_t stream) {
  segments_.clear();
  for (const Tensor& tensor : tensors) {
    if (tensor.count == 0) continue;
    segments_.push_back({tensor.data, bucket, tensor.bytes()});
    bucket += tensor.bytes();
  }
  return copy_segments(segments_, stream, launches_);
}

cudaError_t DeviceBucketCopier::unpack(const std::byte* bucket, std::span<const Tensor> tensors,
                                       cudaStream_t stream) {
  segments_.clear();
  for (const Tensor& tensor : tensors) {
    if (tensor.count == 0) continue;
    segments_.push_back({bucket, tensor.data, tensor.bytes()});
    bucket += tensor.bytes();
  }
  return copy_segments(segments_, stream, launches_);
}

}  // namespace dlx::comm::detail
