// SPDX-License-Identifier: Apache-2.0
#include "dlx/comm/tensor.hpp"

namespace dlx::comm {

std::size_t size_of(DataType type) noexcept {
  switch (type) {
    case DataType::float32:
    case DataType::int32:
    case DataType::uint32:
      return 4;
    case DataType::float64:
    case DataType::int64:
    case DataType::uint64:
      return 8;
  }
  return 0;
}

const char* to_string(DataType type) noexcept {
  switch (type) {
    case DataType::float32: return "float32";
    case DataType::float64: return "float64";
    case DataType::int32: return "int32";
    case DataType::int64: return "int64";
    case DataType::uint32: return "uint32";
    case DataType::uint64: return "uint64";
  }
  return "unknown";
}

const char* to_string(Memory memory) noexcept {
  return memory == Memory::cuda_device ? "cuda_device" : "host";
}

bool is_floating(DataType type) noexcept {
  return type == DataType::float32 || type == DataType::float64;
}

}  // namespace dlx::comm
