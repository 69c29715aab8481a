// SPDX-License-Identifier: Apache-2.0
#include "slurm_release.hpp"

#include <charconv>

#include <fmt/format.h>

namespace dlx::spank {

namespace {

std::optional<unsigned> parse_part(std::string_view text) {
  unsigned value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value > 255) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

SlurmRelease release_of_version_number(unsigned version_number) {
  return {(version_number >> 16) & 0xffU, (version_number >> 8) & 0xffU};
}

std::optional<SlurmRelease> parse_release(std::string_view major, std::string_view minor) {
  const auto major_value = parse_part(major);
  const auto minor_value = parse_part(minor);
  if (!major_value || !minor_value) return std::nullopt;
  return SlurmRelease{*major_value, *minor_value};
}

std::string release_text(SlurmRelease release) { return fmt::format("{}.{:02}", release.major, release.minor); }

std::string release_mismatch(SlurmRelease built_for, SlurmRelease running) {
  if (built_for == running) return "";
  return fmt::format("this plugin was built for Slurm {}, but this is Slurm {}: rebuild/reinstall "
                     "slurm-spank-plugin-dlx for this Slurm (--dl-experiment is refused until then; jobs "
                     "without it run as usual)",
                     release_text(built_for), release_text(running));
}

}  // namespace dlx::spank
