#include "h5_edit.hpp"

#include <hdf5.h>

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

}  // namespace dlx::checkpoint::testing
