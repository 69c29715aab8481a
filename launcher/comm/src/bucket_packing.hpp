#pragma once
// Copies between a fusion bucket's tensors and a contiguous buffer: the bucket is read as the
// concatenation of its tensors' bytes, in order, and a cursor walks through it piece by piece
// (the shared-memory reducer moves a bucket through a fixed-size window in pieces).
#include <cstddef>
#include <span>

#include "dlx/comm/tensor.hpp"

namespace dlx::comm::detail {

std::size_t total_bytes(std::span<const Tensor> tensors) noexcept;

// The whole bucket into / out of `buffer` (at least total_bytes(tensors) long).
void pack(std::span<const Tensor> tensors, std::byte* buffer);
void unpack(const std::byte* buffer, std::span<const Tensor> tensors);

// A position in the concatenation; each call copies the next `bytes` and moves on.
class BucketCursor {
 public:
  explicit BucketCursor(std::span<const Tensor> tensors) : tensors_(tensors) {}

  void pack_next(std::size_t bytes, std::byte* out);
  void unpack_next(std::size_t bytes, const std::byte* in);

 private:
  template <class Copy>
  void walk(std::size_t bytes, Copy&& copy);

  std::span<const Tensor> tensors_;
  std::size_t tensor_ = 0;  // the tensor the next byte is in
  std::size_t offset_ = 0;  // and its offset there
};

}  // namespace dlx::comm::detail
