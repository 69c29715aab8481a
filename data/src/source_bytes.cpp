// SPDX-License-Identifier: Apache-2.0
// source_bytes in a file of its own: the plugin links it for the sbatch check, and with it only the
// manifest walk (no libcrypto, no libarchive in sbatch and slurmstepd).
#include "dlx/data/stage.hpp"
#include "manifest.hpp"

namespace dlx::data {

namespace fs = std::filesystem;

std::uint64_t source_bytes(const std::vector<fs::path>& sources) {
  std::uint64_t bytes = 0;
  for (const auto& source : sources) bytes += read_manifest(source).bytes;
  return bytes;
}

}  // namespace dlx::data
