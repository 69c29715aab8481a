// SPDX-License-Identifier: Apache-2.0
#pragma once
// A checkpoint's content for tests: a tensor of every dtype, shapes of rank 0 to 4 (an empty one
// too), small state of every kind, metadata with hyperparameters. The bytes live in the object.
#include <cstdint>
#include <vector>

#include "dlx/checkpoint/checkpoint.hpp"

namespace dlx::checkpoint::testing {

class SampleContent {
 public:
  // `scale` multiplies the size of the largest tensor ("model/big", float32).
  explicit SampleContent(std::int64_t step = 100, std::size_t big_elements = 1000);
  const CheckpointContent& content() const { return content_; }
  CheckpointContent& content() { return content_; }
  const std::vector<std::byte>& bytes_of(std::size_t tensor) const { return storage_[tensor]; }

 private:
  void add(std::string name, DType dtype, std::vector<std::uint64_t> shape, std::uint8_t seed);
  std::vector<std::vector<std::byte>> storage_;
  CheckpointContent content_;
};

// Exact equality of content and a loaded checkpoint (metadata, state, every tensor byte).
bool same_as(const CheckpointContent& content, const Checkpoint& loaded);

// Where the bytes of tensor `name` start in the file (HDF5's H5Dget_offset).
std::size_t tensor_offset(const std::filesystem::path& path, const std::string& name);

}  // namespace dlx::checkpoint::testing
