// SPDX-License-Identifier: Apache-2.0
#include "dlx/h5/hparams.hpp"

#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "dlx/h5/attributes.hpp"
#include "dlx/h5/error.hpp"
#include "dlx/h5/objects.hpp"

namespace dlx::h5 {
namespace {

void write_hparam(hid_t group, const std::string& name, const nlohmann::ordered_json& value,
                  const std::filesystem::path& file, Strings strings) {
  if (value.is_boolean()) {
    write_flag_attribute(group, name, value.get<bool>(), file);
  } else if (value.is_number_unsigned() &&
             value.get<std::uint64_t>() >
                 static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    write_attribute(group, name, value.get<std::uint64_t>(), file);
  } else if (value.is_number_integer()) {
    write_attribute(group, name, value.get<std::int64_t>(), file);
  } else if (value.is_number_float()) {
    write_attribute(group, name, value.get<double>(), file);
  } else {
    // A string as it is; null, a list or a mapping (Determined passes any value through) as its
    // JSON text: the view stays one attribute per hyperparameter, hparams_json keeps the type.
    const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    if (strings == Strings::fixed_length) {
      write_fixed_string_attribute(group, name, text, file);
    } else {
      write_attribute(group, name, text, file);
    }
  }
}

}  // namespace

std::string hparams_as_json(const nlohmann::ordered_json& hparams) {
  if (!hparams.is_object())
    throw H5Error(fmt::format("hyperparameters must be a JSON object, not {}", hparams.type_name()));
  try {
    return hparams.dump();
  } catch (const nlohmann::json::exception& e) {
    throw H5Error(fmt::format("hyperparameters cannot be stored: {}", e.what()));
  }
}

void write_hparams_group(hid_t parent, const std::string& group_name,
                         const nlohmann::ordered_json& hparams, const std::filesystem::path& file,
                         Strings strings) {
  auto group = create_group(parent, group_name, file);
  for (const auto& [name, value] : hparams.items())
    write_hparam(group.get(), name, value, file, strings);
}

nlohmann::ordered_json parse_hparams_json(const std::string& text,
                                          const std::filesystem::path& file) {
  // Values may be lists and mappings; nesting is bounded while parsing (bounded_json.hpp).
  auto [hparams, too_deep] = parse_bounded_json(text);
  if (hparams.is_discarded() || !hparams.is_object() || too_deep)
    throw_format_error(file, fmt::format("attribute 'hparams_json' of / is not a JSON object of "
                                             "hyperparameters nested at most {} levels deep",
                                             kMaxHparamsDepth));
  return hparams;
}

}  // namespace dlx::h5
