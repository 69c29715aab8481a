// SPDX-License-Identifier: Apache-2.0
#pragma once
// What dlx's HDF5 readers accept from a file, whoever wrote it (docs/checkpoint-format.md and
// docs/file-format.md, "Limits"). A file is input: the sizes, counts and links it declares are
// checked against these limits and against the file's own size before anything is allocated or
// followed, so a crafted file of a few KB cannot make a reader recurse, loop or allocate without
// bound. dlx's own files stay far inside them.
#include <cstddef>
#include <cstdint>

namespace dlx::h5 {

// Groups a recursive reader descends below where it starts (below /tensors in a checkpoint, so a
// tensor name has at most this many '/').
inline constexpr int kMaxGroupDepth = 64;
// Links and attributes a reader looks at in one file (a checkpoint of a million tensors has
// about this many; dlx's trial records hold a few hundred).
inline constexpr std::size_t kMaxObjects = 1'000'000;
// Bytes of one attribute's value (a string, a checksum array): each lives in an object header.
inline constexpr std::uint64_t kMaxAttributeBytes = std::uint64_t{16} << 20;
// Bytes of one chunk of a chunked dataset a reader accepts (trial.h5's metric tables, format 3:
// dlx writes chunks of at most 64 KiB). HDF5 reads a chunk whole, so this bounds what one chunk
// costs besides the data itself.
inline constexpr std::uint64_t kMaxChunkBytes = std::uint64_t{1} << 20;

}  // namespace dlx::h5
