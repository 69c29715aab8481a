// SPDX-License-Identifier: Apache-2.0
#include "dataset.hpp"

#include <array>

#include <fmt/format.h>
#include <hdf5.h>

#include "dlx/h5/attributes.hpp"
#include "dlx/h5/error.hpp"
#include "dlx/h5/handle.hpp"
#include "dlx/h5/objects.hpp"
#include "dlx/common/durable_file.hpp"
#include "synthetic.hpp"

namespace dlx::examples {

namespace h5 = dlx::h5;
using std::filesystem::path;

namespace {

void write_matrix(hid_t group, const char* name, const double* data, hsize_t rows, hsize_t cols,
                  const path& file) {
  const std::array<hsize_t, 2> dims{rows, cols};
  const int rank = cols == 0 ? 1 : 2;
  h5::Handle space(h5::check_id(H5Screate_simple(rank, dims.data(), nullptr), file,
                                "create a dataspace"), H5Sclose);
  h5::Handle dataset(h5::check_id(H5Dcreate2(group, name, H5T_IEEE_F64LE, space.get(),
                                             H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                                  file, fmt::format("create dataset {}", name)),
                     H5Dclose);
  h5::check(H5Dwrite(dataset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), file,
            fmt::format("write dataset {}", name));
}

void write_split(hid_t file_id, const char* split, const SyntheticData& data, std::size_t first,
                 std::size_t rows, std::size_t features, const path& file) {
  auto group = h5::create_group(file_id, split, file);
  write_matrix(group.get(), "features", data.x.data() + first * features, rows, features, file);
  write_matrix(group.get(), "labels", data.y.data() + first, rows, 0, file);
}

// Reads rows offset, offset + stride, ... of a 1-D or 2-D float64 dataset.
std::vector<double> read_strided(hid_t group, const char* name, int offset, int stride,
                                 hsize_t& rows_out, hsize_t& cols_out, const path& file) {
  h5::Handle dataset(h5::check_id(H5Dopen2(group, name, H5P_DEFAULT), file,
                                  fmt::format("open dataset {}", name)), H5Dclose);
  h5::Handle space(h5::check_id(H5Dget_space(dataset.get()), file, "get a dataspace"),
                   H5Sclose);
  std::array<hsize_t, 2> dims{0, 1};
  const int rank = h5::check(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr), file,
                             fmt::format("read the shape of {}", name));
  if (rank < 1 || rank > 2) h5::throw_format_error(file, fmt::format("{} is not 1-D or 2-D", name));
  const auto total = dims[0];
  const auto first = static_cast<hsize_t>(offset);
  const hsize_t count = total > first ? (total - first + static_cast<hsize_t>(stride) - 1) /
                                            static_cast<hsize_t>(stride)
                                      : 0;
  rows_out = count;
  cols_out = rank == 2 ? dims[1] : 1;
  std::vector<double> out(count * cols_out);
  if (count == 0) return out;
  const std::array<hsize_t, 2> start{first, 0};
  const std::array<hsize_t, 2> step{static_cast<hsize_t>(stride), 1};
  const std::array<hsize_t, 2> counts{count, cols_out};
  h5::check(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), step.data(),
                                counts.data(), nullptr), file, "select the shard");
  h5::Handle memory(h5::check_id(H5Screate_simple(rank, counts.data(), nullptr), file,
                                 "create a memory dataspace"), H5Sclose);
  h5::check(H5Dread(dataset.get(), H5T_NATIVE_DOUBLE, memory.get(), space.get(), H5P_DEFAULT,
                    out.data()), file, fmt::format("read the shard of {}", name));
  return out;
}

}  // namespace

path dataset_path(const path& experiment_dir, const DataSpec& spec) {
  return experiment_dir / "data" / fmt::format("synthetic-{}-{}.h5", spec.seed, spec.samples);
}

void ensure_dataset(const path& file, const DataSpec& spec) {
  if (std::filesystem::exists(file)) return;
  std::filesystem::create_directories(file.parent_path());
  const auto data = generate_synthetic(spec.seed, spec.samples, spec.features);
  const auto rows = static_cast<std::size_t>(spec.samples);
  const auto validation = static_cast<std::size_t>(static_cast<double>(rows) *
                                                   spec.validation_fraction);
  const auto features = static_cast<std::size_t>(spec.features);
  const path temporary = temporary_path_for(file);
  try {
    auto handle = h5::create_file(temporary);
    h5::write_attribute(handle.get(), "seed", static_cast<std::uint64_t>(spec.seed), temporary);
    h5::write_attribute(handle.get(), "features", static_cast<std::int64_t>(spec.features),
                        temporary);
    write_split(handle.get(), "train", data, 0, rows - validation, features, temporary);
    write_split(handle.get(), "validation", data, rows - validation, validation, features,
                temporary);
    handle.close(temporary, "close the data set");
    publish_file(temporary, file);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw;
  }
}

Shard read_shard(const path& file, const std::string& split, int rank, int size) {
  auto handle = h5::open_file_read_only(file);
  auto group = h5::open_group(handle.get(), split, file);
  Shard shard;
  hsize_t rows = 0, cols = 0, label_rows = 0, label_cols = 0;
  shard.x = read_strided(group.get(), "features", rank, size, rows, cols, file);
  shard.y = read_strided(group.get(), "labels", rank, size, label_rows, label_cols, file);
  if (rows != label_rows) h5::throw_format_error(file, "features and labels differ in length");
  shard.features = static_cast<std::int64_t>(cols);
  return shard;
}

}  // namespace dlx::examples
