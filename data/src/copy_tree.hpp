#pragma once
// The fast copy of a source into a staging directory: directories first, then the regular files
// by a few threads (copy_file_range each, so the bytes never pass through user space), then the
// directories' own modes (deepest first, so a read-only directory is filled before it is closed).
// Modes are kept (permission bits, not set-id bits); symbolic links are copied as links.
#include <cstdint>
#include <filesystem>

#include "manifest.hpp"

namespace dlx::data {

// Copies the manifest's entries into the existing, empty directory `destination`: a file source
// under its own name, a directory's content. Returns the bytes copied. Throws DataError.
std::uint64_t copy_source(const Manifest& manifest, const std::filesystem::path& destination, unsigned threads);

}  // namespace dlx::data
