// SPDX-License-Identifier: Apache-2.0
#pragma once
// Copies between a fusion bucket's tensors and a contiguous buffer: the bucket is read as the
// concatenation of its tensors' bytes, in order, and a cursor walks through it piece by piece
// (the shared-memory reducer moves a bucket through a fixed-size window in pieces).
#include <algorithm>
#include <cstddef>
#include <span>

#include "dlx/comm/tensor.hpp"

namespace dlx::comm::detail {

std::size_t total_bytes(std::span<const Tensor> tensors) noexcept;

// The whole bucket into / out of `buffer` (at least total_bytes(tensors) long).
void pack(std::span<const Tensor> tensors, std::byte* buffer);
void unpack(const std::byte* buffer, std::span<const Tensor> tensors);

// A position in the concatenation; each call covers the next `bytes` and moves on.
class BucketCursor {
 public:
  explicit BucketCursor(std::span<const Tensor> tensors) : tensors_(tensors) {}

  void pack_next(std::size_t bytes, std::byte* out);
  void unpack_next(std::size_t bytes, const std::byte* in);
  void skip(std::size_t bytes);
  // visit(tensor_bytes, at, length) for each run of the next `bytes` that lies in one tensor:
  // `at` is the run's offset from the current position.
  template <class Visit>
  void walk(std::size_t bytes, Visit&& visit);

 private:

  std::span<const Tensor> tensors_;
  std::size_t tensor_ = 0;  // the tensor the next byte is in
  std::size_t offset_ = 0;  // and its offset there
};

template <class Visit>
void BucketCursor::walk(std::size_t bytes, Visit&& visit) {
  std::size_t done = 0;
  while (done < bytes && tensor_ < tensors_.size()) {
    const Tensor& tensor = tensors_[tensor_];
    const std::size_t run = std::min(bytes - done, tensor.bytes() - offset_);
    if (run > 0) visit(static_cast<std::byte*>(tensor.data) + offset_, done, run);
    done += run;
    offset_ += run;
    if (offset_ == tensor.bytes()) {
      ++tensor_;
      offset_ = 0;
    }
  }
}

}  // namespace dlx::comm::detail
