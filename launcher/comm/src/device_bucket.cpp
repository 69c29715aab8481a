// SPDX-License-Identifier: Apache-2.0
#include "device_bucket.hpp"

namespace dlx::comm::detail {

cudaError_t DeviceBucketCopier::pack(std::span<const Tensor> tensors, std::byte* bucket,
                                     cudaStream_t stream) {
  destinations_.clear();
  sources_.clear();
  sizes_.clear();
  for (const Tensor& tensor : tensors) {
    if (tensor.count == 0) continue;
    destinations_.push_back(bucket);
    sources_.push_back(tensor.data);
    sizes_.push_back(tensor.bytes());
    bucket += tensor.bytes();
  }
  return copy(stream);
}

cudaError_t DeviceBucketCopier::unpack(const std::byte* bucket, std::span<const Tensor> tensors,
                                       cudaStream_t stream) {
  destinations_.clear();
  sources_.clear();
  sizes_.clear();
  for (const Tensor& tensor : tensors) {
    if (tensor.count == 0) continue;
    destinations_.push_back(tensor.data);
    sources_.push_back(bucket);
    sizes_.push_back(tensor.bytes());
    bucket += tensor.bytes();
  }
  return copy(stream);
}

cudaError_t DeviceBucketCopier::copy(cudaStream_t stream) {
  if (sizes_.empty()) return cudaSuccess;
  ++batches_;
#if CUDART_VERSION >= 12080
  // One attribute for the whole batch: the sources are read in stream order (after the work
  // queued before, e.g. the gradient kernels the stream waits for).
  cudaMemcpyAttributes attributes{};
  attributes.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  std::size_t first = 0;
  return cudaMemcpyBatchAsync(destinations_.data(), sources_.data(), sizes_.data(), sizes_.size(),
                              &attributes, &first, 1, stream);
#else
  for (std::size_t i = 0; i < sizes_.size(); ++i) {
    const cudaError_t status = cudaMemcpyAsync(destinations_[i], sources_[i], sizes_[i],
                                               cudaMemcpyDeviceToDevice, stream);
    if (status != cudaSuccess) return status;
  }
  return cudaSuccess;
#endif
}

}  // namespace dlx::comm::detail
