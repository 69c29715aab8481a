// SPDX-License-Identifier: Apache-2.0
#pragma once
// The HDF5 datatype of each checkpoint dtype (checkpoint's own, on top of dlx::h5), little-endian in the file. float16 and bfloat16
// are HDF5 floating-point types built field by field (sign, exponent, mantissa, bias), so HDF5
// tools print them as floats and h5py converts them; everything else is a predefined type.
#include <filesystem>

#include "dlx/checkpoint/dtype.hpp"
#include "dlx/h5/handle.hpp"

namespace dlx::checkpoint {

// A new datatype handle for `dtype` (used both as file and as memory type: hosts are
// little-endian, so the bytes are written and read unconverted).
h5::Handle file_type_of(DType dtype, const std::filesystem::path& file);

// True when the stored type `type` has the layout of `dtype` (class, size, sign, float fields).
bool type_matches(hid_t type, DType dtype);

}  // namespace dlx::checkpoint
