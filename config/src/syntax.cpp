// SPDX-License-Identifier: Apache-2.0
#include "dlx/config/syntax.hpp"

#include <algorithm>

namespace dlx::config {

namespace {

// ASCII classes spelled out: std::isalnum follows the C locale, which a host program (sbatch,
// slurmstepd) may have changed.
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_letter(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool is_word(char c) { return is_letter(c) || is_digit(c) || c == '_'; }

// Consumes a run of digits at text[at]; false when there is none.
bool digit_run(std::string_view text, std::size_t& at) {
  const std::size_t start = at;
  while (at < text.size() && is_digit(text[at])) ++at;
  return at > start;
}

}  // namespace

bool is_slurm_memory(std::string_view text) {
  std::size_t at = 0;
  if (!digit_run(text, at)) return false;
  if (at < text.size() && std::string_view("KMGT").find(text[at]) != std::string_view::npos) ++at;
  return at == text.size();
}

bool is_slurm_time(std::string_view text) {
  std::size_t at = 0;
  if (!digit_run(text, at)) return false;
  if (at < text.size() && text[at] == '-') {  // the digits were days
    ++at;
    if (!digit_run(text, at)) return false;
  }
  for (int fields = 0; fields < 2 && at < text.size() && text[at] == ':'; ++fields) {
    ++at;
    if (!digit_run(text, at)) return false;
  }
  return at == text.size();
}

bool is_partition_name(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return is_word(c) || c == '.' || c == '-'; });
}

bool is_variable_name(std::string_view text) {
  return !text.empty() && !is_digit(text.front()) && std::all_of(text.begin(), text.end(), is_word);
}

bool is_hyperparameter_key(std::string_view text) {
  return !text.empty() && !is_digit(text.front()) && text.front() != '-' &&
         std::all_of(text.begin(), text.end(), [](char c) { return is_word(c) || c == '-' || c == '.'; });
}

}  // namespace dlx::config
