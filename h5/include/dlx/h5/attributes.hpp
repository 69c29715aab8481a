// SPDX-License-Identifier: Apache-2.0
#pragma once
// Scalar attributes: 32- and 64-bit integers, doubles, int8 flags and UTF-8 strings (variable
// length, so h5py reads them as str). Readers convert numeric types and accept fixed-length
// strings.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <hdf5.h>

namespace dlx::h5 {

void write_attribute(hid_t object, const std::string& name, std::int32_t value,
                     const std::filesystem::path& file);
void write_attribute(hid_t object, const std::string& name, std::int64_t value,
                     const std::filesystem::path& file);
void write_attribute(hid_t object, const std::string& name, std::uint64_t value,
                     const std::filesystem::path& file);
void write_attribute(hid_t object, const std::string& name, std::uint32_t value,
                     const std::filesystem::path& file);
// A 1-D attribute of unsigned 32-bit values (per-block checksums).
void write_attribute(hid_t object, const std::string& name, const std::vector<std::uint32_t>& values,
                     const std::filesystem::path& file);
void write_attribute(hid_t object, const std::string& name, double value,
                     const std::filesystem::path& file);
void write_attribute(hid_t object, const std::string& name, const std::string& value,
                     const std::filesystem::path& file);
// A fixed-length UTF-8 string (null-terminated): stored inside the object header, which the
// HDF5 1.8+ format checksums, rather than in the global heap, which it does not. h5py reads it
// as bytes.
void write_fixed_string_attribute(hid_t object, const std::string& name, const std::string& value,
                                  const std::filesystem::path& file);
void write_flag_attribute(hid_t object, const std::string& name, bool value,
                          const std::filesystem::path& file);

bool has_attribute(hid_t object, const std::string& name, const std::filesystem::path& file);

// Deletes every attribute of `object` (a writer that updates a file it wrote, then writes them all
// again: the write functions above create, and refuse a name that exists).
void delete_attributes(hid_t object, const std::filesystem::path& file);

// Each throws "missing attribute <name>" when absent and names the attribute on any failure. A
// value that declares more bytes than the file has, or than kMaxAttributeBytes, is refused
// before anything is allocated for it.
std::int64_t read_int64_attribute(hid_t object, const std::string& name,
                                  const std::filesystem::path& file);
int read_int_attribute(hid_t object, const std::string& name, const std::filesystem::path& file);
double read_double_attribute(hid_t object, const std::string& name,
                             const std::filesystem::path& file);
std::string read_string_attribute(hid_t object, const std::string& name,
                                  const std::filesystem::path& file);
// A 1-D (or scalar) integer attribute as unsigned 32-bit values.
std::vector<std::uint32_t> read_uint32_array_attribute(hid_t object, const std::string& name,
                                                       const std::filesystem::path& file);

// The number of elements attribute `name` declares (its dataspace), without reading it.
std::uint64_t attribute_elements(hid_t object, const std::string& name,
                                 const std::filesystem::path& file);

// Names of the attributes of `object`, in creation order when tracked, else name order; refuses
// an object of more than kMaxObjects attributes.
std::vector<std::string> attribute_names(hid_t object, const std::filesystem::path& file);
// The type class (H5T_INTEGER, H5T_FLOAT, H5T_STRING...) of an existing attribute.
H5T_class_t attribute_class(hid_t object, const std::string& name,
                            const std::filesystem::path& file);

}  // namespace dlx::h5
