#pragma once
// One-dimensional contiguous datasets of int64 or float64 (zero length allowed).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <hdf5.h>

namespace dlx::checkpoint::h5 {

void write_vector(hid_t group, const std::string& name, const std::vector<std::int64_t>& values,
                  const std::filesystem::path& file);
void write_vector(hid_t group, const std::string& name, const std::vector<double>& values,
                  const std::filesystem::path& file);

// Each throws when `name` is missing, not a dataset, not 1-D or not numeric.
std::vector<std::int64_t> read_int64_vector(hid_t group, const std::string& name,
                                            const std::filesystem::path& file);
std::vector<double> read_double_vector(hid_t group, const std::string& name,
                                       const std::filesystem::path& file);

}  // namespace dlx::checkpoint::h5
