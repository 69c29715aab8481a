#include "array_request.hpp"

#include <algorithm>
#include <regex>
#include <sstream>

#include <fmt/format.h>

namespace dlx::spank {

std::optional<long> highest_array_index(const std::string& spec) {
  static const std::regex item(R"((\d+)(?:-(\d+)(?::\d+)?)?)");
  std::string indices = spec.substr(0, spec.find('%'));
  std::stringstream items(indices);
  std::string token;
  long highest = -1;
  while (std::getline(items, token, ',')) {
    std::smatch match;
    if (!std::regex_match(token, match, item)) return std::nullopt;
    highest = std::max(highest, std::stol(match[match[2].matched ? 2 : 1].str()));
  }
  if (highest < 0) return std::nullopt;
  return highest;
}

std::string check_user_array(const std::string& user_spec, int trial_count, const std::string& file) {
  auto highest = highest_array_index(user_spec);
  if (!highest) return "";  // sbatch validates the syntax itself
  if (*highest < trial_count) return "";
  return fmt::format("dlx: --dl-experiment: --array={} names trial {} but {} has {} trial{} (0-{}) "
                     "(drop --array to run every trial, or choose indices from 0-{})",
                     user_spec, *highest, file, trial_count, trial_count == 1 ? "" : "s",
                     trial_count - 1, trial_count - 1);
}

}  // namespace dlx::spank
