// SPDX-License-Identifier: Apache-2.0
#pragma once
// Files, groups and links, opened or created through checked calls into owned Handles.
//
// Reading treats a file as hostile input: it is opened only when it is a regular file (a FIFO or a
// device would block or never end), through the descriptor that was checked, and groups are
// opened only through hard links. dlx never writes soft or external links into the files it
// reads back, and following one could leave the file (an external link opens another file, which
// may be a FIFO) or loop (a soft link to an ancestor); so a reader refuses them by name.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "dlx/h5/handle.hpp"
#include "dlx/common/unique_fd.hpp"

namespace dlx::h5 {

// Every file dlx creates gets this mode, whatever the umask: group members may read results,
// nobody but the owner may plant or rewrite them.
inline constexpr unsigned kFileMode = 0640;

struct FileOptions {
  // HDF5 1.8+ object headers and superblock: every metadata block carries HDF5's own checksum
  // (h5py, h5dump and HDFView read it). Off: the oldest format that holds the data.
  bool checksummed_metadata = false;
  // Start objects of at least 64 KiB on this boundary (0: no alignment), so that large datasets
  // begin on a page and are read and written in whole pages.
  hsize_t alignment = 0;
};

// Creates `path` (which must not exist yet) for writing, mode kFileMode whatever the umask: dlx
// creates the file itself (O_EXCL, never more open than kFileMode, then fchmod) and HDF5 then
// takes it over through /proc/self/fd, so it is never open to others even for an instant.
Handle create_file(const std::filesystem::path& path, const FileOptions& options = {});

// Creates `path` (which must not exist yet) as kFileMode, copies into it the bytes of the HDF5
// file open at `source_fd` (from its start; copy_file_range: a reflink or a server-side copy where
// the file system has one) and opens the copy for writing. For a writer that extends its own last
// file instead of writing everything again (trial.h5's metrics); the copy is then published like
// a new file (temp + fsync + rename).
Handle create_file_copy(const std::filesystem::path& path, int source_fd);

enum class Symlinks { follow, refuse };

// A file opened for reading: the descriptor dlx checked, its size at open, and HDF5's handle on
// the same file.
struct ReadOnlyFile {
  UniqueFd fd;
  std::uint64_t bytes = 0;
  Handle file;
};

// Opens `path` for reading without blocking (O_NONBLOCK; O_NOFOLLOW when `symlinks` is refuse),
// requires a regular file with the HDF5 signature, and has HDF5 open that very file through
// /proc/self/fd/<fd>, so that nothing can swap it between the check and the open. `kind` names
// what the caller expects, for messages ("dlx checkpoint", "dlx trial record"). Throws H5Error:
// "<path>: not a regular file (a FIFO), so not a <kind>".
ReadOnlyFile open_regular_file(const std::filesystem::path& path, Symlinks symlinks,
                               std::string_view kind);
// open_regular_file(path, Symlinks::follow, "HDF5 file").file.
Handle open_file_read_only(const std::filesystem::path& path);

// The size of the file holding `object` (its end of file), for checks of what it declares.
std::uint64_t file_bytes_of(hid_t object, const std::filesystem::path& file);

Handle open_root_group(hid_t file_id, const std::filesystem::path& file);
// Creates group `name` below `parent`; attributes keep their creation order (h5dump, h5py).
Handle create_group(hid_t parent, const std::string& name, const std::filesystem::path& file);
// Opens group `name` through a hard link; throws "missing group <name>" when it does not exist
// and refuses a soft or external link.
Handle open_group(hid_t parent, const std::string& name, const std::filesystem::path& file);

bool has_link(hid_t parent, const std::string& name, const std::filesystem::path& file);
// Throws unless `name` below `parent` is a hard link (a soft, external or user-defined one is
// refused with a message naming it). `name` is one path component.
void require_hard_link(hid_t parent, const std::string& name, const std::filesystem::path& file);
// "a soft link", "an external link", "a user-defined link" for messages.
std::string_view link_kind(H5L_type_t type);
// The path of an open object inside its file ("/metrics/training"), for messages; "?" if unknown.
std::string object_path(hid_t object);
// "<kind> <path of parent>/<name>", e.g. "dataset /metrics/training/loss", for messages.
std::string describe(std::string_view kind, hid_t parent, const std::string& name);

struct LinkEntry {
  std::string name;
  H5L_type_t type = H5L_TYPE_HARD;
};
// The links directly below a group, in name order, read in one pass (H5Literate); refuses a
// group of more than kMaxObjects links.
std::vector<LinkEntry> links(hid_t group, const std::filesystem::path& file);
// Their names.
std::vector<std::string> link_names(hid_t group, const std::filesystem::path& file);

}  // namespace dlx::h5
