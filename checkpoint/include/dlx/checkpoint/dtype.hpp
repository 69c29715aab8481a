// SPDX-License-Identifier: Apache-2.0
#pragma once
// Element types a checkpoint tensor can have. The name is what `dlx ckpt show` prints and what
// each dataset's `dtype` attribute holds; the HDF5 file types are in docs/checkpoint-format.md.
#include <cstddef>
#include <optional>
#include <string_view>

namespace dlx::checkpoint {

enum class DType {
  float32,
  float64,
  float16,   // IEEE half: HDF5 16-bit float, h5py reads numpy float16
  bfloat16,  // HDF5 custom float (8-bit exponent, 7-bit mantissa), h5py reads it as float32
  int8,
  int16,
  int32,
  int64,
  uint8,
  uint16,
  uint32,
  uint64,
};

inline constexpr DType kAllDTypes[] = {DType::float32, DType::float64, DType::float16,
                                       DType::bfloat16, DType::int8,   DType::int16,
                                       DType::int32,   DType::int64,   DType::uint8,
                                       DType::uint16,  DType::uint32,  DType::uint64};

std::string_view dtype_name(DType dtype) noexcept;
std::size_t dtype_size(DType dtype) noexcept;
std::optional<DType> dtype_from_name(std::string_view name) noexcept;

}  // namespace dlx::checkpoint
