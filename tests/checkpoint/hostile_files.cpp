// SPDX-License-Identifier: Apache-2.0
#include "hostile_files.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "checkpoint_samples.hpp"
#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/h5/handle.hpp"
#include "dlx/record/trial_record.hpp"
#include "test_support.hpp"

namespace dlx::checkpoint::testing {
namespace {

using h5::Handle;

hid_t checked(hid_t id, const std::string& what) {
  if (id < 0) throw std::runtime_error("hostile_files: cannot " + what);
  return id;
}

void checked_status(herr_t status, const std::string& what) {
  if (status < 0) throw std::runtime_error("hostile_files: cannot " + what);
}

// `newer_format`: new objects get HDF5 1.8+ headers, as a checkpoint's own (large attributes).
void edit_file(const std::filesystem::path& path, bool newer_format, const FileEdit& edit) {
  Handle access(checked(H5Pcreate(H5P_FILE_ACCESS), "create file access properties"), H5Pclose);
  if (newer_format)
    checked_status(H5Pset_libver_bounds(access.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST),
                   "choose the 1.8 format");
  Handle file(checked(H5Fopen(path.c_str(), H5F_ACC_RDWR, access.get()), "open " + path.string()),
              H5Fclose);
  edit(file.get());
}

void remove_if_there(hid_t file, const std::string& path) {
  if (H5Lexists(file, path.c_str(), H5P_DEFAULT) > 0)
    checked_status(H5Ldelete(file, path.c_str(), H5P_DEFAULT), "delete " + path);
}

Handle links_with_parents() {
  Handle links(checked(H5Pcreate(H5P_LINK_CREATE), "create link properties"), H5Pclose);
  checked_status(H5Pset_create_intermediate_group(links.get(), 1), "set intermediate groups");
  return links;
}

void write_tensor_attributes(hid_t dataset, std::uint64_t bytes) {
  // dtype "float32" as a fixed-length string, CRCs of the declared size, the block size.
  Handle string_type(checked(H5Tcopy(H5T_C_S1), "copy a string type"), H5Tclose);
  checked_status(H5Tset_size(string_type.get(), 8), "size a string type");
  Handle scalar(checked(H5Screate(H5S_SCALAR), "create a scalar space"), H5Sclose);
  Handle dtype(checked(H5Acreate2(dataset, "dtype", string_type.get(), scalar.get(), H5P_DEFAULT,
                                  H5P_DEFAULT),
                       "create dtype"),
               H5Aclose);
  checked_status(H5Awrite(dtype.get(), string_type.get(), "float32"), "write dtype");
  hsize_t blocks = bytes == 0 ? 1 : (bytes + kCrcBlockBytes - 1) / kCrcBlockBytes;
  std::vector<std::uint32_t> crcs(blocks, 0);
  Handle crc_space(checked(H5Screate_simple(1, &blocks, nullptr), "create a crc space"), H5Sclose);
  Handle crc(checked(H5Acreate2(dataset, "crc32c", H5T_STD_U32LE, crc_space.get(), H5P_DEFAULT,
                                H5P_DEFAULT),
                     "create crc32c"),
             H5Aclose);
  checked_status(H5Awrite(crc.get(), H5T_NATIVE_UINT32, crcs.data()), "write crc32c");
  std::uint64_t block_bytes = kCrcBlockBytes;
  Handle block(checked(H5Acreate2(dataset, "crc32c_block_bytes", H5T_STD_U64LE, scalar.get(),
                                  H5P_DEFAULT, H5P_DEFAULT),
                       "create crc32c_block_bytes"),
               H5Aclose);
  checked_status(H5Awrite(block.get(), H5T_NATIVE_UINT64, &block_bytes), "write block bytes");
}

}  // namespace

void write_checkpoint_then(const std::filesystem::path& path, std::int64_t step,
                           const FileEdit& edit) {
  SampleContent sample(step, 10);
  save_checkpoint(sample.content(), path);
  edit_file(path, true, edit);
}

void write_trial_record_then(const std::filesystem::path& path, const FileEdit& edit) {
  save_trial_record(sample_record(), path);
  edit_file(path, false, edit);
}

void add_hard_link(hid_t file, const std::string& target, const std::string& link) {
  checked_status(H5Lcreate_hard(file, target.c_str(), file, link.c_str(), H5P_DEFAULT, H5P_DEFAULT),
                 "hard-link " + link);
}

void add_soft_link(hid_t file, const std::string& target, const std::string& link) {
  remove_if_there(file, link);
  checked_status(H5Lcreate_soft(target.c_str(), file, link.c_str(), H5P_DEFAULT, H5P_DEFAULT),
                 "soft-link " + link);
}

void add_external_link(hid_t file, const std::filesystem::path& target_file,
                       const std::string& object, const std::string& link) {
  remove_if_there(file, link);
  checked_status(H5Lcreate_external(target_file.c_str(), object.c_str(), file, link.c_str(),
                                    H5P_DEFAULT, H5P_DEFAULT),
                 "external-link " + link);
}

void add_nested_groups(hid_t file, const std::string& top, int depth) {
  Handle group(checked(H5Gcreate2(file, top.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                       "create " + top),
               H5Gclose);
  for (int level = 1; level < depth; ++level)
    group = Handle(checked(H5Gcreate2(group.get(), "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                           "create a nested group"),
                   H5Gclose);
}

void add_declared_dataset(hid_t file, const std::string& path, std::uint64_t elements, hid_t type,
                          Storage storage, bool tensor_attributes) {
  remove_if_there(file, path);
  hsize_t dims[1] = {elements};
  Handle space(checked(storage == Storage::null_space ? H5Screate(H5S_NULL)
                                                      : H5Screate_simple(1, dims, nullptr),
                       "create a dataspace"),
               H5Sclose);
  Handle properties(checked(H5Pcreate(H5P_DATASET_CREATE), "create dataset properties"), H5Pclose);
  if (storage == Storage::chunked) {
    hsize_t chunk[1] = {1u << 20};
    checked_status(H5Pset_chunk(properties.get(), 1, chunk), "set chunks");
  } else if (storage == Storage::chunked_small || storage == Storage::chunked_deflate) {
    hsize_t chunk[1] = {1024};
    checked_status(H5Pset_chunk(properties.get(), 1, chunk), "set chunks");
    if (storage == Storage::chunked_deflate) checked_status(H5Pset_deflate(properties.get(), 9), "set deflate");
  } else {
    checked_status(H5Pset_layout(properties.get(), H5D_CONTIGUOUS), "set contiguous");
    checked_status(H5Pset_alloc_time(properties.get(), H5D_ALLOC_TIME_LATE), "set late allocation");
  }
  Handle dataset(checked(H5Dcreate2(file, path.c_str(), type, space.get(),
                                    links_with_parents().get(), properties.get(), H5P_DEFAULT),
                         "create " + path),
                 H5Dclose);
  if (tensor_attributes) write_tensor_attributes(dataset.get(), elements * H5Tget_size(type));
}

void add_external_storage_dataset(hid_t file, const std::string& path, std::uint64_t elements,
                                  const std::filesystem::path& data_file) {
  remove_if_there(file, path);
  hsize_t dims[1] = {elements};
  Handle space(checked(H5Screate_simple(1, dims, nullptr), "create a dataspace"), H5Sclose);
  Handle properties(checked(H5Pcreate(H5P_DATASET_CREATE), "create dataset properties"), H5Pclose);
  checked_status(H5Pset_external(properties.get(), data_file.c_str(), 0, elements * 8),
                 "set external storage");
  Handle dataset(checked(H5Dcreate2(file, path.c_str(), H5T_IEEE_F64LE, space.get(),
                                    links_with_parents().get(), properties.get(), H5P_DEFAULT),
                         "create " + path),
                 H5Dclose);
}

void add_virtual_dataset(hid_t file, const std::string& path, std::uint64_t elements,
                         const std::filesystem::path& source) {
  remove_if_there(file, path);
  hsize_t dims[1] = {elements};
  Handle space(checked(H5Screate_simple(1, dims, nullptr), "create a dataspace"), H5Sclose);
  Handle source_space(checked(H5Screate_simple(1, dims, nullptr), "create a dataspace"), H5Sclose);
  Handle properties(checked(H5Pcreate(H5P_DATASET_CREATE), "create dataset properties"), H5Pclose);
  checked_status(H5Pset_virtual(properties.get(), space.get(), source.c_str(), "/d",
                                source_space.get()),
                 "map a virtual dataset");
  Handle dataset(checked(H5Dcreate2(file, path.c_str(), H5T_IEEE_F32LE, space.get(),
                                    links_with_parents().get(), properties.get(), H5P_DEFAULT),
                         "create " + path),
                 H5Dclose);
  write_tensor_attributes(dataset.get(), elements * 4);
}

void set_string_attribute(hid_t file, const std::string& object, const std::string& name,
                          const std::string& value, bool fixed_length) {
  Handle target(checked(H5Oopen(file, object.c_str(), H5P_DEFAULT), "open " + object), H5Oclose);
  if (H5Aexists(target.get(), name.c_str()) > 0)
    checked_status(H5Adelete(target.get(), name.c_str()), "delete attribute " + name);
  Handle type(checked(H5Tcopy(H5T_C_S1), "copy a string type"), H5Tclose);
  checked_status(H5Tset_size(type.get(), fixed_length ? value.size() + 1 : H5T_VARIABLE),
                 "size a string type");
  Handle scalar(checked(H5Screate(H5S_SCALAR), "create a scalar space"), H5Sclose);
  Handle attribute(checked(H5Acreate2(target.get(), name.c_str(), type.get(), scalar.get(),
                                      H5P_DEFAULT, H5P_DEFAULT),
                           "create attribute " + name),
                   H5Aclose);
  const char* text = value.c_str();
  checked_status(H5Awrite(attribute.get(), type.get(), fixed_length ? static_cast<const void*>(text)
                                                                    : static_cast<const void*>(&text)),
                 "write attribute " + name);
}

void make_fifo(const std::filesystem::path& path) {
  if (::mkfifo(path.c_str(), 0600) != 0)
    throw std::system_error(errno, std::generic_category(), "mkfifo " + path.string());
}

}  // namespace dlx::checkpoint::testing
