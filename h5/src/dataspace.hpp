// SPDX-License-Identifier: Apache-2.0
#pragma once
// The extent of a simple dataspace, read with checked calls (attributes, datasets and
// stored_extent all need it). Throws H5Error naming `what` in `file`.
#include <filesystem>
#include <string>
#include <vector>

#include <hdf5.h>

namespace dlx::h5 {

// One entry per dimension (none for a scalar or null dataspace).
std::vector<hsize_t> simple_extent_dims(hid_t space, const std::string& what, const std::filesystem::path& file);

}  // namespace dlx::h5
