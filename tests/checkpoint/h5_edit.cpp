// SPDX-License-Identifier: Apache-2.0
#include "h5_edit.hpp"

#include <hdf5.h>

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "dlx/h5/handle.hpp"

namespace dlx::checkpoint::testing {
namespace {

h5::Handle open_for_update(const std::filesystem::path& path) {
  hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  REQUIRE(id >= 0);
  return h5::Handle(id, H5Fclose);
}

}  // namespace

void set_format_version(const std::filesystem::path& path, std::int64_t version) {
  auto file = open_for_update(path);
  h5::Handle attribute(H5Aopen_by_name(file.get(), "/", "format_version", H5P_DEFAULT, H5P_DEFAULT),
                       H5Aclose);
  REQUIRE(attribute.get() >= 0);
  REQUIRE(H5Awrite(attribute.get(), H5T_NATIVE_INT64, &version) >= 0);
}

void remove_link(const std::filesystem::path& path, const char* name) {
  auto file = open_for_update(path);
  REQUIRE(H5Ldelete(file.get(), name, H5P_DEFAULT) >= 0);
}

void remove_attribute(const std::filesystem::path& path, const char* name) {
  auto file = open_for_update(path);
  REQUIRE(H5Adelete_by_name(file.get(), "/", name, H5P_DEFAULT) >= 0);
}

void make_metric_tables_contiguous(const std::filesystem::path& path) {
  auto file = open_for_update(path);
  for (const char* table : {"/metrics/training", "/metrics/validation"}) {
    h5::Handle group(H5Gopen2(file.get(), table, H5P_DEFAULT), H5Gclose);
    REQUIRE(group.get() >= 0);
    H5G_info_t info{};
    REQUIRE(H5Gget_info(group.get(), &info) >= 0);
    std::vector<std::string> names;
    for (hsize_t i = 0; i < info.nlinks; ++i) {
      char name[1100] = {};
      REQUIRE(H5Lget_name_by_idx(group.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name, H5P_DEFAULT) > 0);
      names.emplace_back(name);
    }
    for (const auto& name : names) {
      h5::Handle dataset(H5Dopen2(group.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
      REQUIRE(dataset.get() >= 0);
      h5::Handle type(H5Dget_type(dataset.get()), H5Tclose);
      h5::Handle space(H5Dget_space(dataset.get()), H5Sclose);
      const auto elements = static_cast<std::size_t>(H5Sget_simple_extent_npoints(space.get()));
      std::vector<char> bytes(elements * H5Tget_size(type.get()) + 1);
      if (elements > 0) REQUIRE(H5Dread(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()) >= 0);
      dataset.reset();
      REQUIRE(H5Ldelete(group.get(), name.c_str(), H5P_DEFAULT) >= 0);
      hsize_t dims[1] = {elements};
      h5::Handle plain_space(H5Screate_simple(1, dims, nullptr), H5Sclose);
      h5::Handle created(H5Dcreate2(group.get(), name.c_str(), type.get(), plain_space.get(), H5P_DEFAULT,
                                    H5P_DEFAULT, H5P_DEFAULT),
                         H5Dclose);
      REQUIRE(created.get() >= 0);
      if (elements > 0) REQUIRE(H5Dwrite(created.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()) >= 0);
    }
  }
}

}  // namespace dlx::checkpoint::testing
