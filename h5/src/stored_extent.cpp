// SPDX-License-Identifier: Apache-2.0
// stored_extent: what a dataset declares (layout, extent, type size) against what the file holds
// for it, before a reader allocates or reads anything. Each value comes from the dataset's object
// header (and, for a chunked one, its chunk index); none of these calls reads its data or opens
// another file (the layout is checked first: asking a virtual dataset for its extent can open its
// source files).
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dataspace.hpp"
#include "dlx/h5/datasets.hpp"
#include "dlx/h5/error.hpp"
#include "dlx/h5/limits.hpp"
#include "dlx/h5/objects.hpp"

namespace dlx::h5 {
namespace {

std::string_view layout_text(H5D_layout_t layout) {
  switch (layout) {
    case H5D_CHUNKED: return "chunked";
    case H5D_COMPACT: return "compact (inside its object header)";
    case H5D_VIRTUAL: return "virtual (mapped from other datasets and files)";
    default: return "in an unknown layout";
  }
}

struct Layout {
  H5D_layout_t kind = H5D_CONTIGUOUS;
  std::vector<hsize_t> chunk;  // the chunk's shape, when chunked
};

// The layout: contiguous, or chunked (unfiltered) where `layouts` allows it; never compact,
// virtual or with external storage.
Layout require_layout(hid_t dataset, const std::string& what, const std::filesystem::path& file,
                      Layouts layouts) {
  Handle properties(check_id(H5Dget_create_plist(dataset), file,
                             "read the creation properties of " + what),
                    H5Pclose);
  Layout out;
  out.kind = H5Pget_layout(properties.get());
  if (out.kind < 0) throw_error(file, "read the layout of " + what);
  const bool chunked_allowed = layouts == Layouts::contiguous_or_chunked;
  if (out.kind != H5D_CONTIGUOUS && !(out.kind == H5D_CHUNKED && chunked_allowed))
    throw_format_error(file, fmt::format("{} is stored {}; only {} datasets are read", what,
                                         layout_text(out.kind),
                                         chunked_allowed ? "contiguous or chunked" : "contiguous"));
  auto external = H5Pget_external_count(properties.get());
  if (external != 0)
    throw_format_error(file, fmt::format("{} keeps its data in {} external file(s), which are "
                                         "never read",
                                         what, external < 0 ? 0 : external));
  if (out.kind == H5D_CHUNKED) {
    const int filters = H5Pget_nfilters(properties.get());
    if (filters != 0)
      throw_format_error(file, fmt::format("{} is stored through {} filter(s) (compression); only "
                                           "unfiltered datasets are read",
                                           what, filters < 0 ? 0 : filters));
    hsize_t dims[H5S_MAX_RANK] = {};
    const int rank = H5Pget_chunk(properties.get(), H5S_MAX_RANK, dims);
    if (rank < 1 || rank > H5S_MAX_RANK) throw_error(file, "read the chunk shape of " + what);
    out.chunk.assign(dims, dims + rank);
  }
  return out;
}

// A chunk is read whole: at most kMaxChunkBytes.
void require_small_chunks(const std::vector<hsize_t>& chunk, std::uint64_t element_bytes,
                          const std::string& what, const std::filesystem::path& file) {
  std::uint64_t bytes = element_bytes;
  bool overflow = false;
  for (auto extent : chunk) overflow = overflow || __builtin_mul_overflow(bytes, extent, &bytes);
  if (overflow || bytes > kMaxChunkBytes)
    throw_format_error(file, fmt::format("{} is stored in chunks of [{}] x {} bytes, over the {} "
                                         "bytes of a chunk dlx reads",
                                         what, fmt::join(chunk, ", "), element_bytes, kMaxChunkBytes));
}

}  // namespace

StoredExtent stored_extent(hid_t dataset, const std::string& what,
                           const std::filesystem::path& file, Layouts layouts) {
  const auto layout = require_layout(dataset, what, file, layouts);
  Handle type(check_id(H5Dget_type(dataset), file, "read the type of " + what), H5Tclose);
  const std::uint64_t element_bytes = H5Tget_size(type.get());
  if (element_bytes == 0) throw_error(file, "read the type size of " + what);
  if (layout.kind == H5D_CHUNKED) require_small_chunks(layout.chunk, element_bytes, what, file);
  StoredExtent out;
  {
    Handle space(check_id(H5Dget_space(dataset), file, "read the dataspace of " + what), H5Sclose);
    const auto dims = simple_extent_dims(space.get(), what, file);
    out.shape.assign(dims.begin(), dims.end());
    auto space_class = H5Sget_simple_extent_type(space.get());
    out.elements = space_class == H5S_NULL ? 0 : 1;
    for (auto extent : out.shape)
      if (__builtin_mul_overflow(out.elements, extent, &out.elements))
        throw_format_error(file, fmt::format("{} declares an extent of [{}] elements, more than "
                                             "any file holds",
                                             what, fmt::join(out.shape, ", ")));
  }
  if (__builtin_mul_overflow(out.elements, element_bytes, &out.bytes))
    throw_format_error(file, fmt::format("{} declares [{}] elements of {} bytes, more than any "
                                         "file holds",
                                         what, fmt::join(out.shape, ", "), element_bytes));
  if (out.bytes == 0) return out;
  const std::uint64_t stored = H5Dget_storage_size(dataset);  // 0 when unallocated (or on error)
  H5Eclear2(H5E_DEFAULT);
  const auto file_bytes = file_bytes_of(dataset, file);
  if (layout.kind == H5D_CHUNKED) {
    // Every chunk of the extent stored (a partial last one counts whole), and no more than the
    // file holds: what HDF5 reads is in the file.
    if (stored < out.bytes || stored > file_bytes)
      throw_format_error(file, fmt::format("{} declares {} bytes ([{}] x {} bytes) but the file "
                                           "holds {} bytes of chunks for it (the file has {} bytes)",
                                           what, out.bytes, fmt::join(out.shape, ", "),
                                           element_bytes, stored, file_bytes));
    return out;
  }
  if (stored != out.bytes)
    throw_format_error(file, fmt::format("{} declares {} bytes ([{}] x {} bytes) but the file "
                                         "holds {} bytes for it (the file has {} bytes)",
                                         what, out.bytes, fmt::join(out.shape, ", "),
                                         element_bytes, stored, file_bytes));
  auto offset = H5Dget_offset(dataset);
  H5Eclear2(H5E_DEFAULT);
  std::uint64_t end = 0;
  if (offset == HADDR_UNDEF || __builtin_add_overflow(offset, out.bytes, &end) || end > file_bytes)
    throw_format_error(file, fmt::format("{} declares {} bytes at offset {}, past the end of the "
                                         "file ({} bytes): damaged or truncated",
                                         what, out.bytes,
                                         offset == HADDR_UNDEF ? std::string("(none)")
                                                               : std::to_string(offset),
                                         file_bytes));
  out.offset = offset;
  return out;
}

}  // namespace dlx::h5
