// SPDX-License-Identifier: Apache-2.0
#include "dlx/h5/datasets.hpp"

#include <fmt/format.h>

#include "dataspace.hpp"
#include "dlx/h5/error.hpp"
#include "dlx/h5/handle.hpp"
#include "dlx/h5/objects.hpp"

namespace dlx::h5 {
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
std::vector<T> read_1d_dataset(hid_t dataset, const std::string& what, hid_t memory_type,
                               const std::filesystem::path& file, ReadGuard* guard,
                               Layouts layouts = Layouts::contiguous) {
  // The layout first: nothing below may make HDF5 allocate for, or open a file behind, a
  // dataset stored other than in the file itself as stored_extent allows.
  auto extent = stored_extent(dataset, what, file, layouts);
  Handle type(check_id(H5Dget_type(dataset), file, "read the type of " + what), H5Tclose);
  auto type_class = H5Tget_class(type.get());
  if (type_class != H5T_INTEGER && type_class != H5T_FLOAT)
    throw_format_error(file, fmt::format("{} is not numeric", what));
  if (extent.shape.size() != 1)
    throw_format_error(file, fmt::format("{} is not one-dimensional", what));
  if (guard != nullptr) guard->take(extent.bytes, what);
  std::vector<T> values(static_cast<std::size_t>(extent.elements));
  if (!values.empty())
    check(H5Dread(dataset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), file,
          "read " + what);
  return values;
}

template <typename T>
std::vector<T> read_1d(hid_t group, const std::string& name, hid_t memory_type,
                       const std::filesystem::path& file) {
  auto what = describe("dataset", group, name);
  if (!has_link(group, name, file))
    throw_format_error(file, fmt::format("missing {}", what));
  require_hard_link(group, name, file);
  Handle dataset(check_id(H5Dopen2(group, name.c_str(), H5P_DEFAULT), file, "open " + what),
                 H5Dclose);
  return read_1d_dataset<T>(dataset.get(), what, memory_type, file, nullptr);
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

std::vector<std::int64_t> read_int64_dataset(hid_t dataset, const std::string& what,
                                             ReadGuard& guard, Layouts layouts) {
  return read_1d_dataset<std::int64_t>(dataset, what, H5T_NATIVE_INT64, guard.file(), &guard, layouts);
}

std::vector<double> read_double_dataset(hid_t dataset, const std::string& what, ReadGuard& guard,
                                        Layouts layouts) {
  return read_1d_dataset<double>(dataset, what, H5T_NATIVE_DOUBLE, guard.file(), &guard, layouts);
}

Handle create_extendible_vector(hid_t group, const std::string& name, hid_t file_type,
                                hid_t memory_type, const void* fill, std::uint64_t size,
                                std::uint64_t chunk, const std::filesystem::path& file) {
  hsize_t dims[1] = {static_cast<hsize_t>(size)}, max_dims[1] = {H5S_UNLIMITED};
  Handle space(check_id(H5Screate_simple(1, dims, max_dims), file, "create an extendible dataspace"),
               H5Sclose);
  Handle properties(check_id(H5Pcreate(H5P_DATASET_CREATE), file, "create dataset properties"),
                    H5Pclose);
  const hsize_t chunk_dims[1] = {static_cast<hsize_t>(chunk)};
  check(H5Pset_chunk(properties.get(), 1, chunk_dims), file, "set the chunk size");
  // Early: every chunk of the extent exists in the file, now and after each extension, so a
  // reader can require that (stored_extent) and never reads a declared but absent chunk.
  check(H5Pset_alloc_time(properties.get(), H5D_ALLOC_TIME_EARLY), file, "set early allocation");
  check(H5Pset_fill_value(properties.get(), memory_type, fill), file, "set the fill value");
  check(H5Pset_fill_time(properties.get(), H5D_FILL_TIME_ALLOC), file, "fill chunks as they are allocated");
  return Handle(check_id(H5Dcreate2(group, name.c_str(), file_type, space.get(), H5P_DEFAULT,
                                    properties.get(), H5P_DEFAULT),
                         file, "create " + describe("dataset", group, name)),
                H5Dclose);
}

void resize_vector(hid_t dataset, std::uint64_t size, const std::string& what,
                   const std::filesystem::path& file) {
  const hsize_t dims[1] = {static_cast<hsize_t>(size)};
  check(H5Dset_extent(dataset, dims), file, "resize " + what);
}

void write_vector_range(hid_t dataset, hid_t memory_type, std::uint64_t offset, std::uint64_t count,
                        const void* data, const std::string& what, const std::filesystem::path& file) {
  if (count == 0) return;
  Handle space(check_id(H5Dget_space(dataset), file, "read the dataspace of " + what), H5Sclose);
  const hsize_t start[1] = {static_cast<hsize_t>(offset)}, length[1] = {static_cast<hsize_t>(count)};
  check(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, length, nullptr), file,
        "select rows of " + what);
  Handle memory(check_id(H5Screate_simple(1, length, nullptr), file, "create a 1-D dataspace"), H5Sclose);
  check(H5Dwrite(dataset, memory_type, memory.get(), space.get(), H5P_DEFAULT, data), file, "write " + what);
}

std::int64_t read_int64_element(hid_t dataset, std::uint64_t index, const std::string& what,
                                const std::filesystem::path& file) {
  Handle space(check_id(H5Dget_space(dataset), file, "read the dataspace of " + what), H5Sclose);
  const hsize_t start[1] = {static_cast<hsize_t>(index)}, length[1] = {1};
  check(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, length, nullptr), file,
        "select an element of " + what);
  Handle memory(check_id(H5Screate_simple(1, length, nullptr), file, "create a 1-D dataspace"), H5Sclose);
  std::int64_t value = 0;
  check(H5Dread(dataset, H5T_NATIVE_INT64, memory.get(), space.get(), H5P_DEFAULT, &value), file,
        "read " + what);
  return value;
}

std::uint64_t vector_size(hid_t dataset, const std::string& what, const std::filesystem::path& file) {
  Handle space(check_id(H5Dget_space(dataset), file, "read the dataspace of " + what), H5Sclose);
  const auto dims = simple_extent_dims(space.get(), what, file);
  if (dims.size() != 1) throw_format_error(file, fmt::format("{} is not one-dimensional", what));
  return dims[0];
}

Handle create_array(hid_t group, const std::string& name, hid_t type,
                    const std::vector<std::uint64_t>& shape, const std::filesystem::path& file) {
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  Handle space(check_id(shape.empty() ? H5Screate(H5S_SCALAR)
                                      : H5Screate_simple(static_cast<int>(dims.size()),
                                                         dims.data(), nullptr),
                        file, "create a dataspace"),
               H5Sclose);
  Handle properties(check_id(H5Pcreate(H5P_DATASET_CREATE), file, "create dataset properties"),
                    H5Pclose);
  check(H5Pset_layout(properties.get(), H5D_CONTIGUOUS), file, "set a contiguous layout");
  check(H5Pset_alloc_time(properties.get(), H5D_ALLOC_TIME_EARLY), file, "set early allocation");
  check(H5Pset_fill_time(properties.get(), H5D_FILL_TIME_NEVER), file, "switch off fill values");
  Handle links(check_id(H5Pcreate(H5P_LINK_CREATE), file, "create link properties"), H5Pclose);
  check(H5Pset_create_intermediate_group(links.get(), 1), file, "create intermediate groups");
  return Handle(check_id(H5Dcreate2(group, name.c_str(), type, space.get(), links.get(),
                                    properties.get(), H5P_DEFAULT),
                         file, "create " + describe("dataset", group, name)),
                H5Dclose);
}

void write_array(hid_t group, const std::string& name, hid_t type,
                 const std::vector<std::uint64_t>& shape, const void* data,
                 const std::filesystem::path& file) {
  auto dataset = create_array(group, name, type, shape, file);
  std::uint64_t elements = 1;
  for (auto extent : shape) elements *= extent;
  if (elements > 0)
    check(H5Dwrite(dataset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), file,
          "write " + describe("dataset", group, name));
}

std::vector<std::uint64_t> dataset_shape(hid_t dataset, const std::filesystem::path& file) {
  Handle space(check_id(H5Dget_space(dataset), file, "read a dataspace"), H5Sclose);
  const auto dims = simple_extent_dims(space.get(), "a dataset", file);
  return {dims.begin(), dims.end()};
}

std::optional<std::uint64_t> contiguous_offset(hid_t dataset) {
  haddr_t offset = H5Dget_offset(dataset);
  if (offset == HADDR_UNDEF) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  return offset;
}

}  // namespace dlx::h5
