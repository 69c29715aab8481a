#include "hparams_io.hpp"

#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "dlx/checkpoint/error.hpp"
#include "dlx/checkpoint/h5/attributes.hpp"
#include "dlx/checkpoint/h5/error.hpp"
#include "dlx/checkpoint/h5/objects.hpp"

namespace dlx::checkpoint::detail {
namespace {

void write_hparam(hid_t group, const std::string& name, const nlohmann::ordered_json& value,
                  const std::filesystem::path& file, Strings strings) {
  if (value.is_boolean()) {
    h5::write_flag_attribute(group, name, value.get<bool>(), file);
  } else if (value.is_number_unsigned() &&
             value.get<std::uint64_t>() >
                 static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    h5::write_attribute(group, name, value.get<std::uint64_t>(), file);
  } else if (value.is_number_integer()) {
    h5::write_attribute(group, name, value.get<std::int64_t>(), file);
  } else if (value.is_number_float()) {
    h5::write_attribute(group, name, value.get<double>(), file);
  } else if (value.is_string() && strings == Strings::fixed_length) {
    h5::write_fixed_string_attribute(group, name, value.get<std::string>(), file);
  } else if (value.is_string()) {
    h5::write_attribute(group, name, value.get<std::string>(), file);
  } else {
    throw CheckpointError(
        fmt::format("hyperparameter '{}' is {}; dlx files hold only numbers, strings and booleans",
                    name,
                    value.is_null()    ? "null"
                    : value.is_array() ? "an array"
                                       : "an object"));
  }
}

}  // namespace

std::string hparams_as_json(const nlohmann::ordered_json& hparams) {
  if (!hparams.is_object())
    throw CheckpointError(
        fmt::format("hyperparameters must be a JSON object, not {}", hparams.type_name()));
  try {
    return hparams.dump();
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(fmt::format("hyperparameters cannot be stored: {}", e.what()));
  }
}

void write_hparams_group(hid_t parent, const std::string& group_name,
                         const nlohmann::ordered_json& hparams, const std::filesystem::path& file,
                         Strings strings) {
  auto group = h5::create_group(parent, group_name, file);
  for (const auto& [name, value] : hparams.items())
    write_hparam(group.get(), name, value, file, strings);
}

nlohmann::ordered_json parse_hparams_json(const std::string& text,
                                          const std::filesystem::path& file) {
  // dlx writes a flat object (write_hparams_group refuses anything nested), so anything nested is
  // refused, and dropped while parsing: a crafted text nested a million deep then costs neither
  // memory nor, in the copies and dumps that would follow, stack (they recurse).
  using Json = nlohmann::ordered_json;
  bool nested = false;
  auto flat_only = [&nested](int depth, Json::parse_event_t event, Json&) {
    if (depth > 0 && (event == Json::parse_event_t::object_start ||
                      event == Json::parse_event_t::array_start)) {
      nested = true;
      return false;
    }
    return true;
  };
  auto hparams = Json::parse(text, flat_only, false);
  if (hparams.is_discarded() || !hparams.is_object() || nested)
    h5::throw_format_error(file, "attribute 'hparams_json' of / is not a flat JSON object (each "
                                 "hyperparameter a number, string or boolean)");
  return hparams;
}

}  // namespace dlx::checkpoint::detail
