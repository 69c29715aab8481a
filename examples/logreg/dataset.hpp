// SPDX-License-Identifier: Apache-2.0
#pragma once
// The synthetic binary-classification data set of the logistic-regression example.
// Rank 0 generates it deterministically from (seed, samples, features) into
//   <experiment dir>/data/synthetic-<seed>-<samples>.h5
//     /train/features        float64 [rows, features]     /train/labels       float64 [rows]
//     /validation/features   float64 [rows, features]     /validation/labels  float64 [rows]
// through a temporary name + publish_file, so trials starting together never read a partial
// file (each writes its own temporary; the renames replace identical contents). An existing file
// is reused. Every rank then reads only its shard: rows rank, rank + size, rank + 2 size, ...
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace dlx::examples {

struct DataSpec {
  std::uint64_t seed = 7;
  std::int64_t samples = 4096;   // training + validation rows
  std::int64_t features = 16;
  double validation_fraction = 0.2;
};

struct Shard {
  std::int64_t features = 0;
  std::vector<double> x;  // row-major [rows, features]
  std::vector<double> y;  // 0 or 1
  std::size_t rows() const noexcept { return y.size(); }
};

std::filesystem::path dataset_path(const std::filesystem::path& experiment_dir,
                                   const DataSpec& spec);

// Writes the data set unless it exists. Call on one rank only. Throws h5::H5Error.
void ensure_dataset(const std::filesystem::path& path, const DataSpec& spec);

// Reads rows rank, rank + size, ... of "train" or "validation". Throws h5::H5Error.
Shard read_shard(const std::filesystem::path& path, const std::string& split, int rank, int size);

}  // namespace dlx::examples
