#include "dlx/checkpoint/h5/datasets.hpp"

#include <fmt/format.h>

#include "dlx/checkpoint/h5/error.hpp"
#include "dlx/checkpoint/h5/handle.hpp"
#include "dlx/checkpoint/h5/objects.hpp"

namespace dlx::checkpoint::h5 {
namespace {

void write_1d(hid_t group, const std::string& name, hid_t file_type, hid_t memory_type,
              std::size_t size, const void* data, const std::filesystem::path& file) {
  hsize_t dims[1] = {static_cast<hsize_t>(size)};
  Handle space(check_id(H5Screate_simple(1, dims, nullptr), file, "create a 1-D dataspace"),
               H5Sclose);
  auto what = describe("dataset", group, name);
  Handle dataset(check_id(H5Dcreate2(group, name.c_str(), file_type, space.get(), H5P_DEFAULT,
                                     H5P_DEFAULT, H5P_DEFAULT),
                          file, "create " + what),
                 H5Dclose);
  if (size > 0)
    check(H5Dwrite(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), file,
          "write " + what);
}

template <typename T>
std::vector<T> read_1d(hid_t group, const std::string& name, hid_t memory_type,
                       const std::filesystem::path& file) {
  auto what = describe("dataset", group, name);
  if (!has_link(group, name, file))
    throw_format_error(file, fmt::format("missing {} (not a dlx trial record?)", what));
  Handle dataset(check_id(H5Dopen2(group, name.c_str(), H5P_DEFAULT), file, "open " + what),
                 H5Dclose);
  Handle type(check_id(H5Dget_type(dataset.get()), file, "read the type of " + what), H5Tclose);
  auto type_class = H5Tget_class(type.get());
  if (type_class != H5T_INTEGER && type_class != H5T_FLOAT)
    throw_format_error(file, fmt::format("{} is not numeric", what));
  Handle space(check_id(H5Dget_space(dataset.get()), file, "read the dataspace of " + what),
               H5Sclose);
  if (H5Sget_simple_extent_ndims(space.get()) != 1)
    throw_format_error(file, fmt::format("{} is not one-dimensional", what));
  hsize_t dims[1] = {0};
  check(H5Sget_simple_extent_dims(space.get(), dims, nullptr), file, "read the size of " + what);
  std::vector<T> values(static_cast<std::size_t>(dims[0]));
  if (!values.empty())
    check(H5Dread(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), file,
          "read " + what);
  return values;
}

}  // namespace

void write_vector(hid_t group, const std::string& name, const std::vector<std::int64_t>& values,
                  const std::filesystem::path& file) {
  write_1d(group, name, H5T_STD_I64LE, H5T_NATIVE_INT64, values.size(), values.data(), file);
}

void write_vector(hid_t group, const std::string& name, const std::vector<double>& values,
                  const std::filesystem::path& file) {
  write_1d(group, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values.size(), values.data(), file);
}

std::vector<std::int64_t> read_int64_vector(hid_t group, const std::string& name,
                                            const std::filesystem::path& file) {
  return read_1d<std::int64_t>(group, name, H5T_NATIVE_INT64, file);
}

std::vector<double> read_double_vector(hid_t group, const std::string& name,
                                       const std::filesystem::path& file) {
  return read_1d<double>(group, name, H5T_NATIVE_DOUBLE, file);
}

}  // namespace dlx::checkpoint::h5
