// SPDX-License-Identifier: Apache-2.0
#pragma once
// The fast copy of a source into a staging directory: directories first, then the regular files
// by a few threads (copy_file_range each, so the bytes never pass through user space), then the
// directories' own modes (deepest first, so a read-only directory is filled before it is closed).
// Modes are kept (permission bits, not set-id bits), and the files' modification times; symbolic
// links are copied as links. Everything
// is created relative to the staging directory's handle: the tree below it is this process's own
// making (the manifest's entries), so no name in it can lead out.
#include <cstdint>
#include <filesystem>

#include "manifest.hpp"

namespace dlx::data {

// Copies the manifest's entries into the existing, empty directory `destination` (open; `shown` is
// its path, for messages): a file source under its own name, a directory's content. Returns the
// bytes copied. Throws DataError.
std::uint64_t copy_source(const Manifest& manifest, int destination, const std::filesystem::path& shown,
                          unsigned threads);

}  // namespace dlx::data
