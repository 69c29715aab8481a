// SPDX-License-Identifier: Apache-2.0
#include "array_request.hpp"

#include <charconv>

#include <fmt/format.h>

#include "dlx/config/display_text.hpp"

namespace dlx::spank {

namespace {

// The run of digits at spec[at] (advancing `at`), or nothing when there is none.
std::optional<ArrayIndex> array_index_at(std::string_view spec, std::size_t& at) {
  const std::size_t start = at;
  while (at < spec.size() && spec[at] >= '0' && spec[at] <= '9') ++at;
  if (at == start) return std::nullopt;
  ArrayIndex index{spec.substr(start, at - start), std::nullopt};
  std::uint64_t value = 0;
  // The digits were checked above: the only failure left is a value over 2^64-1.
  if (std::from_chars(spec.data() + start, spec.data() + at, value).ec == std::errc{}) index.value = value;
  return index;
}

bool larger(const ArrayIndex& a, const ArrayIndex& b) {
  if (!a.value || !b.value) return !a.value && b.value;
  return *a.value > *b.value;
}

}  // namespace

std::optional<ArrayIndex> highest_array_index(std::string_view spec) {
  const std::string_view indices = spec.substr(0, spec.find('%'));
  std::optional<ArrayIndex> highest;
  std::size_t at = 0;
  while (true) {
    auto first = array_index_at(indices, at);
    if (!first) return std::nullopt;
    ArrayIndex item = *first;
    if (at < indices.size() && indices[at] == '-') {
      ++at;
      auto last = array_index_at(indices, at);
      if (!last) return std::nullopt;
      if (larger(*last, item)) item = *last;
      if (at < indices.size() && indices[at] == ':') {
        ++at;
        if (!array_index_at(indices, at)) return std::nullopt;  // the step
      }
    }
    if (!highest || larger(item, *highest)) highest = item;
    if (at == indices.size()) return highest;
    if (indices[at] != ',') return std::nullopt;
    ++at;
  }
}

std::string check_user_array(std::string_view user_spec, int trial_count, const std::string& file) {
  if (user_spec.size() > kMaxArraySpecLength) {
    return fmt::format("--dl-experiment: --array is {} characters long, more than the limit of {}: '{}' "
                       "(drop --array to run every trial, or give ranges such as 0-{})",
                       user_spec.size(), kMaxArraySpecLength, config::abbreviated(user_spec, 32), trial_count - 1);
  }
  const auto highest = highest_array_index(user_spec);
  if (!highest) return "";  // sbatch validates the syntax itself
  if (highest->value && *highest->value < static_cast<std::uint64_t>(trial_count)) return "";
  return fmt::format("--dl-experiment: --array={} names trial {} but {} has {} trial{} (0-{}) "
                     "(drop --array to run every trial, or choose indices from 0-{})",
                     config::abbreviated(user_spec), config::abbreviated(highest->written), file, trial_count,
                     trial_count == 1 ? "" : "s", trial_count - 1, trial_count - 1);
}

}  // namespace dlx::spank
