// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Slurm release the plugin was built for against the one that loaded it. A SPANK plugin uses
// Slurm's structures and symbols as they are in the release its headers came from, so it is built
// for one release (22.05: the major and minor of SLURM_VERSION_NUMBER); micro releases (22.05.8,
// 22.05.9) keep the SPANK ABI, as Slurm's own plugin_version check assumes (docs/admin-guide.md,
// section 11, "What a Slurm release mismatch does").
#include <optional>
#include <string>
#include <string_view>

namespace dlx::spank {

struct SlurmRelease {
  unsigned major = 0;  // 22
  unsigned minor = 0;  // 5

  bool operator==(const SlurmRelease&) const = default;
};

// The release of a SLURM_VERSION_NUMBER (0x160508 -> 22.05).
SlurmRelease release_of_version_number(unsigned version_number);

// The release from spank_get_item's S_SLURM_VERSION_MAJOR and _MINOR ("22", "05"); nothing when
// either is not a number below 256.
std::optional<SlurmRelease> parse_release(std::string_view major, std::string_view minor);

// "22.05".
std::string release_text(SlurmRelease release);

// "" when `running` is `built_for`, else the line that refuses --dl-experiment (without the
// "dlx: " the plugin puts before it).
std::string release_mismatch(SlurmRelease built_for, SlurmRelease running);

}  // namespace dlx::spank
