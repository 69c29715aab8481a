// SPDX-License-Identifier: Apache-2.0
#pragma once
// Tensors as the checkpoint library sees them: a TensorView to save (not owned; host memory, or
// CUDA device memory when dlx is built with CUDA) and a Tensor that owns its bytes (what a load
// or an async snapshot returns). Bytes are row-major and little-endian (the host's order).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dlx/checkpoint/dtype.hpp"

namespace dlx::checkpoint {

enum class MemoryLocation { host, cuda_device };

struct TensorView {
  std::string name;  // "model/fc1/weight": each '/' is a group below /tensors
  DType dtype = DType::float32;
  std::vector<std::uint64_t> shape;  // {} is a scalar
  const void* data = nullptr;        // may be null only when the shape holds no element
  MemoryLocation location = MemoryLocation::host;
  // Copied by an async CheckpointWriter after save() has returned, on its own thread: the caller
  // keeps the memory unchanged until wait_for_snapshot() returns (or the next save(), wait()).
  // Elsewhere (a sync writer, save_checkpoint) it changes nothing.
  bool snapshot_in_background = false;

  std::uint64_t element_count() const noexcept;
  std::size_t byte_size() const noexcept { return element_count() * dtype_size(dtype); }
};

// Page-aligned host bytes, uninitialised. Pinned (page-locked through the CUDA runtime) when
// asked for and available, so that device-to-host copies run at full bandwidth. Move-only.
class HostBuffer {
 public:
  HostBuffer() noexcept = default;
  static HostBuffer allocate(std::size_t bytes, bool pinned = false);
  // The caller's memory, `bytes` long, which the buffer uses and never frees (a load placing a
  // tensor into memory its caller owns: Deferral::place).
  static HostBuffer borrow(std::byte* data, std::size_t bytes) noexcept;
  ~HostBuffer();
  HostBuffer(HostBuffer&& other) noexcept;
  HostBuffer& operator=(HostBuffer&& other) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  std::byte* data() noexcept { return data_; }
  const std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  bool pinned() const noexcept { return pinned_; }
  bool borrowed() const noexcept { return borrowed_; }

 private:
  void release() noexcept;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  bool pinned_ = false;
  bool borrowed_ = false;
};

struct Tensor {
  std::string name;
  DType dtype = DType::float32;
  std::vector<std::uint64_t> shape;
  HostBuffer bytes;

  TensorView view() const { return {name, dtype, shape, bytes.data(), MemoryLocation::host}; }
  // The elements as T; the caller names the right T for `dtype` (std::uint16_t for 16-bit floats).
  template <class T>
  std::span<const T> as() const {
    return {reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T)};
  }
};

}  // namespace dlx::checkpoint
