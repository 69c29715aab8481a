// SPDX-License-Identifier: Apache-2.0
#pragma once
// One-dimensional datasets of int64 or float64 (zero length allowed): contiguous, or chunked and
// extendible (trial.h5's metric tables, appended to in place of being rewritten); and N-D
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

// How a dataset a reader accepts may be stored. Checkpoint tensors are contiguous (read by file
// offset); trial.h5's metric tables (format 3) are chunked and extendible.
enum class Layouts { contiguous, contiguous_or_chunked };

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
                                             ReadGuard& guard, Layouts layouts = Layouts::contiguous);
std::vector<double> read_double_dataset(hid_t dataset, const std::string& what, ReadGuard& guard,
                                        Layouts layouts = Layouts::contiguous);

// What a dataset dlx reads declares, checked against the file before anything is read or
// allocated. Contiguous: unfiltered and in the file itself, the extent times the stored type's
// size exactly the bytes the file holds for it, at an offset inside the file. Chunked (only where
// `layouts` allows it): unfiltered (no compression: what is read is what is stored), chunks of at
// most kMaxChunkBytes, and every chunk of the extent allocated in the file (the bytes the file
// holds for it at least the extent's and at most the file's size; a chunked dataset could
// otherwise declare any extent without storing a byte, which HDF5 would read as fill values).
// Anything else (compact, virtual, external storage) is refused: a virtual or external one would
// make HDF5 open other files. Throws H5Error naming `what`, what it declares and what the file
// holds.
struct StoredExtent {
  std::vector<std::uint64_t> shape;  // {} for a scalar
  std::uint64_t elements = 0;
  std::uint64_t bytes = 0;                // elements x the stored type's size
  std::optional<std::uint64_t> offset;    // where the bytes start; nullopt when there are none
};
StoredExtent stored_extent(hid_t dataset, const std::string& what,
                           const std::filesystem::path& file, Layouts layouts = Layouts::contiguous);

// Extendible 1-D datasets: chunked (`chunk` elements each), unfiltered, unlimited in size, their
// chunks allocated when created and when extended (so that every chunk of the extent is in the
// file) and filled with `fill` (NaN for metrics). `fill` points to one value of `memory_type`.
Handle create_extendible_vector(hid_t group, const std::string& name, hid_t file_type,
                                hid_t memory_type, const void* fill, std::uint64_t size,
                                std::uint64_t chunk, const std::filesystem::path& file);
// Grows (new elements hold the fill value) or shrinks an extendible dataset to `size` elements.
void resize_vector(hid_t dataset, std::uint64_t size, const std::string& what,
                   const std::filesystem::path& file);
// Writes `count` elements of `data` (of `memory_type`) at element `offset`.
void write_vector_range(hid_t dataset, hid_t memory_type, std::uint64_t offset, std::uint64_t count,
                        const void* data, const std::string& what, const std::filesystem::path& file);
// One element of a 1-D int64 dataset (a binary search over a file's steps reads O(log n) of them).
std::int64_t read_int64_element(hid_t dataset, std::uint64_t index, const std::string& what,
                                const std::filesystem::path& file);
// The number of elements of a 1-D dataset.
std::uint64_t vector_size(hid_t dataset, const std::string& what, const std::filesystem::path& file);

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
