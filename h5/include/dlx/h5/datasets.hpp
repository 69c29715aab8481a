#pragma once
// One-dimensional contiguous datasets of int64 or float64 (zero length allowed), and N-D
// contiguous arrays of any type (checkpoint tensors; rank 0 is a scalar dataspace).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <hdf5.h>

#include "dlx/h5/handle.hpp"
#include "dlx/h5/read_guard.hpp"

namespace dlx::h5 {

void write_vector(hid_t group, const std::string& name, const std::vector<std::int64_t>& values,
                  const std::filesystem::path& file);
void write_vector(hid_t group, const std::string& name, const std::vector<double>& values,
                  const std::filesystem::path& file);

// Each throws when `name` is missing, not a hard link to a dataset, not 1-D, not numeric, or not
// stored as stored_extent requires.
std::vector<std::int64_t> read_int64_vector(hid_t group, const std::string& name,
                                            const std::filesystem::path& file);
std::vector<double> read_double_vector(hid_t group, const std::string& name,
                                       const std::filesystem::path& file);
// The same for an open dataset whose path is `what`, its bytes taken from `guard`.
std::vector<std::int64_t> read_int64_dataset(hid_t dataset, const std::string& what,
                                             ReadGuard& guard);
std::vector<double> read_double_dataset(hid_t dataset, const std::string& what, ReadGuard& guard);

// What a dataset dlx reads declares, checked against the file before anything is read or
// allocated. dlx writes every dataset contiguous, unfiltered and in the file itself, so anything
// else (chunked, compact, virtual, external storage) is refused: a chunked dataset declares any
// extent it likes without storing a byte, and a virtual or external one would make HDF5 open
// other files. The extent times the stored type's size must be exactly the bytes the file holds
// for the dataset, at an offset inside the file. Throws H5Error naming `what`, what it
// declares and what the file holds.
struct StoredExtent {
  std::vector<std::uint64_t> shape;  // {} for a scalar
  std::uint64_t elements = 0;
  std::uint64_t bytes = 0;                // elements x the stored type's size
  std::optional<std::uint64_t> offset;    // where the bytes start; nullopt when there are none
};
StoredExtent stored_extent(hid_t dataset, const std::string& what,
                           const std::filesystem::path& file);

// Creates an N-D contiguous dataset of `shape`, its space allocated at creation (so that its bytes
// have a file offset: contiguous_offset) and never filled; the caller writes the bytes.
Handle create_array(hid_t group, const std::string& name, hid_t type,
                    const std::vector<std::uint64_t>& shape, const std::filesystem::path& file);

// Creates an N-D contiguous dataset allocated at creation (so that its data has a file offset)
// and writes `data` into it unconverted (`type` is both file and memory type). `data` may be null
// when the shape holds no element.
void write_array(hid_t group, const std::string& name, hid_t type,
                 const std::vector<std::uint64_t>& shape, const void* data,
                 const std::filesystem::path& file);

// The extent of a dataset ({} for a scalar).
std::vector<std::uint64_t> dataset_shape(hid_t dataset, const std::filesystem::path& file);

// Where a contiguous dataset's bytes start in the file; nullopt when they have no single place
// (chunked or compact layout, not allocated).
std::optional<std::uint64_t> contiguous_offset(hid_t dataset);

}  // namespace dlx::h5
