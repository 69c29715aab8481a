#pragma once
// Files, groups and links, opened or created through checked calls into owned Handles.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "dlx/checkpoint/h5/handle.hpp"

namespace dlx::checkpoint::h5 {

struct FileOptions {
  // HDF5 1.8+ object headers and superblock: every metadata block carries HDF5's own checksum
  // (h5py, h5dump and HDFView read it). Off: the oldest format that holds the data.
  bool checksummed_metadata = false;
  // Start objects of at least 64 KiB on this boundary (0: no alignment), so that large datasets
  // begin on a page and are read and written in whole pages.
  hsize_t alignment = 0;
};

// Creates `path` (which must not exist yet) for writing.
Handle create_file(const std::filesystem::path& path, const FileOptions& options = {});
// Opens an existing file read-only; `path` must already be known to exist.
Handle open_file_read_only(const std::filesystem::path& path);

Handle open_root_group(hid_t file_id, const std::filesystem::path& file);
// Creates group `name` below `parent`; attributes keep their creation order (h5dump, h5py).
Handle create_group(hid_t parent, const std::string& name, const std::filesystem::path& file);
// Opens group `name`; throws "missing group <name>" when it does not exist.
Handle open_group(hid_t parent, const std::string& name, const std::filesystem::path& file);

bool has_link(hid_t parent, const std::string& name, const std::filesystem::path& file);
// The path of an open object inside its file ("/metrics/training"), for messages; "?" if unknown.
std::string object_path(hid_t object);
// "<kind> <path of parent>/<name>", e.g. "dataset /metrics/training/loss", for messages.
std::string describe(std::string_view kind, hid_t parent, const std::string& name);

// Names of the links directly below a group, in name order.
std::vector<std::string> link_names(hid_t group, const std::filesystem::path& file);

}  // namespace dlx::checkpoint::h5
