// SPDX-License-Identifier: Apache-2.0
#pragma once
// A type-erased view of a buffer handed to a collective: pointer, element count, element type and
// where the memory is (host, or the device memory of the rank's GPU). The caller owns the memory
// and keeps it alive until the collective (or its handle) is done. `Tensor::of(span)` builds one
// from any span of host values, `Tensor::on_cuda_device(...)` one from a device pointer.
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

namespace dlx::comm {

// The element types every backend reduces. The values are the C API's dlx_dtype (c_api.h).
enum class DataType : int { float32 = 0, float64 = 1, int32 = 2, int64 = 3, uint32 = 4, uint64 = 5 };

std::size_t size_of(DataType type) noexcept;
const char* to_string(DataType type) noexcept;  // "float32", ...
bool is_floating(DataType type) noexcept;

template <class T>
inline constexpr bool kIsReducible =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
    std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::uint32_t> ||
    std::is_same_v<T, std::uint64_t>;

template <class T>
concept Reducible = kIsReducible<std::remove_const_t<T>>;

template <Reducible T>
constexpr DataType data_type_of() {
  using U = std::remove_const_t<T>;
  if constexpr (std::is_same_v<U, float>) return DataType::float32;
  else if constexpr (std::is_same_v<U, double>) return DataType::float64;
  else if constexpr (std::is_same_v<U, std::int32_t>) return DataType::int32;
  else if constexpr (std::is_same_v<U, std::int64_t>) return DataType::int64;
  else if constexpr (std::is_same_v<U, std::uint32_t>) return DataType::uint32;
  else return DataType::uint64;
}

// Where a tensor's bytes are. cuda_device: memory of the GPU the rank's communicator uses
// (cudaMalloc, PyTorch's CUDA tensors), which the host must never dereference.
enum class Memory { host, cuda_device };

const char* to_string(Memory memory) noexcept;  // "host", "cuda_device"

struct Tensor {
  void* data = nullptr;
  std::size_t count = 0;  // elements, not bytes
  DataType type = DataType::float32;
  Memory memory = Memory::host;

  std::size_t bytes() const noexcept { return count * size_of(type); }

  template <Reducible T>
    requires(!std::is_const_v<T>)
  static Tensor of(std::span<T> values) noexcept {
    return Tensor{values.data(), values.size(), data_type_of<T>(), Memory::host};
  }
  static Tensor on_cuda_device(void* data, std::size_t count, DataType type) noexcept {
    return Tensor{data, count, type, Memory::cuda_device};
  }
  bool on_device() const noexcept { return memory == Memory::cuda_device; }
};

}  // namespace dlx::comm
