// SPDX-License-Identifier: Apache-2.0
#pragma once
// Hostile HDF5 files for the reader tests (issue 17, findings 3, 5 and 6): a valid checkpoint or
// trial record written by dlx, then edited through the HDF5 C API into what an attacker could
// hand a reader: link cycles, soft and external links (to a FIFO too), deep nesting, datasets
// that declare gigabytes they do not store, and a FIFO in place of a file. Each edit is still a
// valid HDF5 file (h5dump reads it): what is hostile is what dlx's readers would do with it.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include <hdf5.h>

namespace dlx::checkpoint::testing {

using FileEdit = std::function<void(hid_t file)>;

// save_checkpoint of a small sample (`step`), then `edit` with the file open read-write.
void write_checkpoint_then(const std::filesystem::path& path, std::int64_t step,
                           const FileEdit& edit);
// save_trial_record(sample_record()), then `edit`.
void write_trial_record_then(const std::filesystem::path& path, const FileEdit& edit);

// `link` (a path in the file) becomes a hard link to the group `target`.
void add_hard_link(hid_t file, const std::string& target, const std::string& link);
// `link` becomes a soft link to `target`.
void add_soft_link(hid_t file, const std::string& target, const std::string& link);
// `link` becomes an external link to object `object` of file `target_file`.
void add_external_link(hid_t file, const std::filesystem::path& target_file,
                       const std::string& object, const std::string& link);
// `depth` groups nested one in another, starting at `top` (a new group).
void add_nested_groups(hid_t file, const std::string& top, int depth);

enum class Storage {
  chunked,             // chunked (chunks of 2^20 elements), no chunk written: any extent in a few
                       // hundred bytes
  chunked_small,       // chunked in chunks of 1,024 elements, none written
  chunked_deflate,     // chunked in chunks of 1,024 elements through deflate (a bomb's shape:
                       // refused for the filter before its chunks are looked at)
  contiguous_missing,  // contiguous, never allocated: the extent is declared, no byte is stored
  null_space,          // contiguous with an empty (H5S_NULL) dataspace: no extent at all
};
// A dataset at `path` (replacing one already there) of `elements` elements of `type`, stored as
// `storage` says; with `tensor_attributes` it also carries a checkpoint tensor's attributes
// (dtype float32, block CRCs for its declared size), so only its storage is wrong.
void add_declared_dataset(hid_t file, const std::string& path, std::uint64_t elements, hid_t type,
                          Storage storage, bool tensor_attributes);
// A 1-D float64 dataset at `path` (replacing one there) of `elements` elements whose data lives
// in the external file `data_file` (HDF5's external storage).
void add_external_storage_dataset(hid_t file, const std::string& path, std::uint64_t elements,
                                  const std::filesystem::path& data_file);
// A virtual float32 dataset at `path` (replacing one there) mapped from dataset /d of `source`,
// with a checkpoint tensor's attributes.
void add_virtual_dataset(hid_t file, const std::string& path, std::uint64_t elements,
                         const std::filesystem::path& source);

// Replaces attribute `name` of the object at `object` with the string `value`: fixed-length (as
// in checkpoints) or variable-length (as in trial.h5).
void set_string_attribute(hid_t file, const std::string& object, const std::string& name,
                          const std::string& value, bool fixed_length);

// A FIFO at `path` (nothing ever writes to it: opening it for reading without O_NONBLOCK blocks).
void make_fifo(const std::filesystem::path& path);

}  // namespace dlx::checkpoint::testing
