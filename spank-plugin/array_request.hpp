// SPDX-License-Identifier: Apache-2.0
#pragma once
// A user's explicit --array next to --dl-experiment: allowed when it names only trials that exist
// (to rerun some of them, or to set another throttle), rejected otherwise. Never overridden.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dlx::spank {

// The longest --array value the plugin reads (docs/config-reference.md, "Limits"); a list of
// every index up to Slurm's largest MaxArraySize fits several times over.
inline constexpr std::size_t kMaxArraySpecLength = 65536;

// The largest index an sbatch --array value names ("0-7:2%3,9" -> 9), with its digits as written.
struct ArrayIndex {
  std::string_view written;
  std::optional<std::uint64_t> value;  // nothing when it does not fit in 64 bits
};

// Reads `spec` ("N", "N-M" or "N-M:S" items separated by commas, then an optional "%LIMIT") in one
// pass, without std::regex (whose recursion overflowed sbatch's stack on a long value). Nothing
// when the value is not an index list it understands: sbatch's own check reports that.
std::optional<ArrayIndex> highest_array_index(std::string_view spec);

// "" when `user_spec` fits an experiment of `trial_count` trials, else the complete message (the
// plugin's callback prints it after "dlx: ").
std::string check_user_array(std::string_view user_spec, int trial_count, const std::string& file);

}  // namespace dlx::spank
