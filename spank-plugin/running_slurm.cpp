// SPDX-License-Identifier: Apache-2.0
#include "running_slurm.hpp"

#include <string_view>

#include <fmt/format.h>

#include "slurm_release.hpp"

namespace dlx::spank {

std::string running_slurm_problem(spank_t sp) {
  const SlurmRelease built_for = release_of_version_number(built_for_slurm_version());
  char* major = nullptr;
  char* minor = nullptr;
  if (spank_get_item(sp, S_SLURM_VERSION_MAJOR, &major) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_SLURM_VERSION_MINOR, &minor) != ESPANK_SUCCESS || major == nullptr ||
      minor == nullptr) {
    return fmt::format("dlx: this plugin was built for Slurm {}, but cannot read this Slurm's version "
                       "(spank_get_item): rebuild/reinstall slurm-spank-plugin-dlx for this Slurm",
                       release_text(built_for));
  }
  const auto running = parse_release(major, minor);
  if (!running) {
    return fmt::format("dlx: this plugin was built for Slurm {}, but this Slurm calls itself version "
                       "'{}.{}': rebuild/reinstall slurm-spank-plugin-dlx for this Slurm",
                       release_text(built_for), std::string_view(major).substr(0, 16),
                       std::string_view(minor).substr(0, 16));
  }
  if (auto mismatch = release_mismatch(built_for, *running); !mismatch.empty()) return "dlx: " + mismatch;
  return "";
}

}  // namespace dlx::spank
