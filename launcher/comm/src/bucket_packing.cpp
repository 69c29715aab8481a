// SPDX-License-Identifier: Apache-2.0
#include "bucket_packing.hpp"

#include <algorithm>
#include <cstring>

namespace dlx::comm::detail {

std::size_t total_bytes(std::span<const Tensor> tensors) noexcept {
  std::size_t bytes = 0;
  for (const auto& tensor : tensors) bytes += tensor.bytes();
  return bytes;
}

void pack(std::span<const Tensor> tensors, std::byte* buffer) {
  for (const auto& tensor : tensors) {
    if (tensor.count == 0) continue;  // an empty tensor may have no storage at all
    std::memcpy(buffer, tensor.data, tensor.bytes());
    buffer += tensor.bytes();
  }
}

void unpack(const std::byte* buffer, std::span<const Tensor> tensors) {
  for (const auto& tensor : tensors) {
    if (tensor.count == 0) continue;
    std::memcpy(tensor.data, buffer, tensor.bytes());
    buffer += tensor.bytes();
  }
}

void BucketCursor::pack_next(std::size_t bytes, std::byte* out) {
  walk(bytes, [out](const std::byte* tensor, std::size_t at, std::size_t piece) {
    std::memcpy(out + at, tensor, piece);
  });
}

void BucketCursor::unpack_next(std::size_t bytes, const std::byte* in) {
  walk(bytes, [in](std::byte* tensor, std::size_t at, std::size_t piece) {
    std::memcpy(tensor, in + at, piece);
  });
}

void BucketCursor::skip(std::size_t bytes) {
  walk(bytes, [](std::byte*, std::size_t, std::size_t) {});
}

}  // namespace dlx::comm::detail
