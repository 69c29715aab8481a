// SPDX-License-Identifier: Apache-2.0
#include "trial_notes_io.hpp"

#include <cstdint>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dlx/h5/attributes.hpp"
#include "dlx/h5/error.hpp"
#include "layout.hpp"

namespace dlx::record {
namespace {

// The most text the warnings' JSON can need: every field at its bound, each character escaped
// (\u00XX: 6 bytes), plus the keys and punctuation.
constexpr std::size_t kMaxHparamWarningsJsonBytes =
    kMaxHparamWarnings * (6 * (kMaxHparamWarningNameBytes + kMaxHparamWarningBytes + 16) + 64);

[[noreturn]] void refuse(const std::filesystem::path& file, const std::string& problem) {
  h5::throw_format_error(file, fmt::format("attribute '{}' of / {}", layout::kHparamWarnings, problem));
}

std::string field(const nlohmann::json& item, const char* key, std::size_t max_bytes, std::size_t index,
                  const std::filesystem::path& file) {
  const auto found = item.find(key);
  if (found == item.end() || !found->is_string()) refuse(file, fmt::format("has no string '{}' in entry {}", key, index));
  auto text = found->get<std::string>();
  if (text.size() > max_bytes) {
    refuse(file, fmt::format("has a '{}' of {} bytes in entry {}, over the limit of {}", key, text.size(), index,
                             max_bytes));
  }
  return text;
}

std::vector<HparamWarning> parse_warnings(const std::string& text, const std::filesystem::path& file) {
  if (text.size() > kMaxHparamWarningsJsonBytes) {
    refuse(file, fmt::format("is {} bytes, over the limit of {}", text.size(), kMaxHparamWarningsJsonBytes));
  }
  const auto json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_array()) refuse(file, "is not a JSON array");
  if (json.size() > kMaxHparamWarnings) {
    refuse(file, fmt::format("holds {} warnings, over the limit of {}", json.size(), kMaxHparamWarnings));
  }
  std::vector<HparamWarning> warnings;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const auto& item = json[i];
    if (!item.is_object()) refuse(file, fmt::format("has entry {} that is not an object", i));
    HparamWarning warning{field(item, "kind", 16, i, file), field(item, "name", kMaxHparamWarningNameBytes, i, file),
                          field(item, "message", kMaxHparamWarningBytes, i, file)};
    if (warning.kind != "default" && warning.kind != "unread") {
      refuse(file, fmt::format("has entry {} of kind '{}' (not default or unread)", i, warning.kind));
    }
    warnings.push_back(std::move(warning));
  }
  return warnings;
}

}  // namespace

void write_trial_notes(hid_t root, const TrialRecord& record, const std::filesystem::path& file) {
  if (!record.hparam_warnings.empty()) {
    auto json = nlohmann::json::array();
    for (const auto& warning : record.hparam_warnings) {
      json.push_back({{"kind", warning.kind}, {"name", warning.name}, {"message", warning.message}});
    }
    // Bytes that are not UTF-8 (a name from a trainer) become U+FFFD: the attribute stays JSON.
    h5::write_attribute(root, layout::kHparamWarnings, json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                        file);
  }
  if (!record.last_error.empty()) {
    h5::write_attribute(root, layout::kLastError, bounded_text(record.last_error, kMaxLastErrorBytes), file);
    h5::write_attribute(root, layout::kSameFailures, std::int32_t{record.same_failures}, file);
  }
}

void read_trial_notes(hid_t root, TrialRecord& record, h5::ReadGuard& guard) {
  const auto& file = guard.file();
  if (h5::has_attribute(root, layout::kHparamWarnings, file)) {
    const auto text = h5::read_string_attribute(root, layout::kHparamWarnings, file);
    guard.take(text.size(), fmt::format("attribute '{}' of /", layout::kHparamWarnings));
    record.hparam_warnings = parse_warnings(text, file);
  }
  if (h5::has_attribute(root, layout::kLastError, file)) {
    record.last_error = h5::read_string_attribute(root, layout::kLastError, file);
    guard.take(record.last_error.size(), fmt::format("attribute '{}' of /", layout::kLastError));
    if (record.last_error.size() > kMaxLastErrorBytes) {
      h5::throw_format_error(file, fmt::format("attribute '{}' of / is {} bytes, over the limit of {}",
                                               layout::kLastError, record.last_error.size(), kMaxLastErrorBytes));
    }
    if (h5::has_attribute(root, layout::kSameFailures, file)) {
      record.same_failures = h5::read_int_attribute(root, layout::kSameFailures, file);
      if (record.same_failures < 0) {
        h5::throw_format_error(file, fmt::format("attribute '{}' of / is {}, below 0", layout::kSameFailures,
                                                 record.same_failures));
      }
    }
  }
}

}  // namespace dlx::record
