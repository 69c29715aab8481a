#pragma once
// Scalar attributes: 32- and 64-bit integers, doubles, int8 flags and UTF-8 strings (variable
// length, so h5py reads them as str). Readers convert numeric types and accept fixed-length
// strings.
#include <cstdint>
#include <filesystem>
#include <string>

#include <hdf5.h>

namespace dlx::checkpoint::h5 {

void write_attribute(hid_t object, const std::string& name, std::int32_t value,
                     const std::filesystem::path& file);
void write_attribute(hid_t object, const std::string& name, std::int64_t value,
                     const std::filesystem::path& file);
void write_attribute(hid_t object, const std::string& name, std::uint64_t value,
                     const std::filesystem::path& file);
void write_attribute(hid_t object, const std::string& name, double value,
                     const std::filesystem::path& file);
void write_attribute(hid_t object, const std::string& name, const std::string& value,
                     const std::filesystem::path& file);
void write_flag_attribute(hid_t object, const std::string& name, bool value,
                          const std::filesystem::path& file);

bool has_attribute(hid_t object, const std::string& name, const std::filesystem::path& file);

// Each throws "missing attribute <name>" when absent and names the attribute on any failure.
std::int64_t read_int64_attribute(hid_t object, const std::string& name,
                                  const std::filesystem::path& file);
int read_int_attribute(hid_t object, const std::string& name, const std::filesystem::path& file);
double read_double_attribute(hid_t object, const std::string& name,
                             const std::filesystem::path& file);
std::string read_string_attribute(hid_t object, const std::string& name,
                                  const std::filesystem::path& file);

}  // namespace dlx::checkpoint::h5
