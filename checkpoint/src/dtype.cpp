// SPDX-License-Identifier: Apache-2.0
#include "dlx/checkpoint/dtype.hpp"

namespace dlx::checkpoint {

std::string_view dtype_name(DType dtype) noexcept {
  switch (dtype) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::float16: return "float16";
    case DType::bfloat16: return "bfloat16";
    case DType::int8: return "int8";
    case DType::int16: return "int16";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::uint8: return "uint8";
    case DType::uint16: return "uint16";
    case DType::uint32: return "uint32";
    case DType::uint64: return "uint64";
  }
  return "?";
}

std::size_t dtype_size(DType dtype) noexcept {
  switch (dtype) {
    case DType::int8:
    case DType::uint8: return 1;
    case DType::float16:
    case DType::bfloat16:
    case DType::int16:
    case DType::uint16: return 2;
    case DType::float32:
    case DType::int32:
    case DType::uint32: return 4;
    case DType::float64:
    case DType::int64:
    case DType::uint64: return 8;
  }
  return 0;
}

std::optional<DType> dtype_from_name(std::string_view name) noexcept {
  for (auto dtype : kAllDTypes)
    if (dtype_name(dtype) == name) return dtype;
  return std::nullopt;
}

}  // namespace dlx::checkpoint
