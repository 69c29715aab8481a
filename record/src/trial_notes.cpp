// SPDX-License-Identifier: Apache-2.0
// The record's bounded notes: hyperparameter name warnings and the last crash's text.
#include <algorithm>

#include "dlx/record/trial_record.hpp"

namespace dlx::record {

std::string bounded_text(std::string text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  constexpr std::string_view kEllipsis = "...";
  std::size_t keep = max_bytes > kEllipsis.size() ? max_bytes - kEllipsis.size() : 0;
  // Back to the first byte of a character: never half of a UTF-8 sequence.
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  text.resize(keep);
  if (text.size() + kEllipsis.size() <= max_bytes) text += kEllipsis;
  return text;
}

bool add_hparam_warning(TrialRecord& record, HparamWarning warning) {
  auto& warnings = record.hparam_warnings;
  warning.name = bounded_text(std::move(warning.name), kMaxHparamWarningNameBytes);
  warning.message = bounded_text(std::move(warning.message), kMaxHparamWarningBytes);
  const bool known = std::ranges::any_of(warnings, [&](const HparamWarning& kept) {
    return kept.kind == warning.kind && kept.name == warning.name;
  });
  if (known || warnings.size() >= kMaxHparamWarnings) return false;
  warnings.push_back(std::move(warning));
  return true;
}

}  // namespace dlx::record
