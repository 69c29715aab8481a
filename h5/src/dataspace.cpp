// SPDX-License-Identifier: Apache-2.0
#include "dataspace.hpp"

#include "dlx/h5/error.hpp"

namespace dlx::h5 {

std::vector<hsize_t> simple_extent_dims(hid_t space, const std::string& what, const std::filesystem::path& file) {
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0) throw_error(file, "read the rank of " + what);
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0) check(H5Sget_simple_extent_dims(space, dims.data(), nullptr), file, "read the extent of " + what);
  return dims;
}

}  // namespace dlx::h5
