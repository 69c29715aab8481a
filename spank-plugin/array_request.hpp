#pragma once
// A user's explicit --array next to --dl-experiment: allowed when it names only trials that exist
// (to rerun some of them, or to set another throttle), rejected otherwise. Never overridden.
#include <optional>
#include <string>

namespace dlx::spank {

// The largest index an sbatch --array value names ("0-7:2%3,9" -> 9); nullopt when the value
// is not an index list we understand (then sbatch's own check reports it).
std::optional<long> highest_array_index(const std::string& spec);

// "" when `user_spec` fits an experiment of `trial_count` trials, else the complete message.
std::string check_user_array(const std::string& user_spec, int trial_count, const std::string& file);

}  // namespace dlx::spank
