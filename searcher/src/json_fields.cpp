// SPDX-License-Identifier: Apache-2.0
#include "json_fields.hpp"

#include <limits>

#include <fmt/format.h>

#include "dlx/config/display_text.hpp"
#include "dlx/searcher/journal.hpp"

namespace dlx::searcher::detail {

const char* json_kind(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::binary: return "binary data";
    case nlohmann::json::value_t::discarded: return "nothing";
    default: return "a number";
  }
}

const nlohmann::json& json_member(const nlohmann::json& object, const char* key, const char* what) {
  if (!object.is_object()) throw JournalError(fmt::format("{}: expected an object, found {}", what, json_kind(object)));
  const auto found = object.find(key);
  if (found == object.end()) throw JournalError(fmt::format("{}: field \"{}\" is missing", what, key));
  return *found;
}

namespace {

// `value` as an integer in [low, high]; `key` names its field in messages (nullptr: a value).
std::int64_t integer_in(const nlohmann::json& value, const char* key, const char* what, std::int64_t low,
                        std::int64_t high) {
  const auto field = [&] { return key ? fmt::format("field \"{}\"", key) : std::string("a value"); };
  bool in_range = false;
  std::int64_t result = 0;
  if (value.is_number_unsigned()) {
    const auto number = value.get<std::uint64_t>();
    in_range = number <= static_cast<std::uint64_t>(high);
    result = static_cast<std::int64_t>(number);
    in_range = in_range && result >= low;
  } else if (value.is_number_integer()) {
    result = value.get<std::int64_t>();
    in_range = result >= low && result <= high;
  } else if (!value.is_number()) {
    throw JournalError(fmt::format("{}: {} must be an integer, found {}", what, field(), json_kind(value)));
  }
  if (!in_range) {
    throw JournalError(fmt::format("{}: {}: {} is not an integer from {} to {}", what, field(),
                                   config::abbreviated(value.dump(), 32), low, high));
  }
  return result;
}

}  // namespace

std::int64_t json_integer(const nlohmann::json& object, const char* key, const char* what, std::int64_t low,
                          std::int64_t high) {
  return integer_in(json_member(object, key, what), key, what, low, high);
}

int json_as_int(const nlohmann::json& value, const char* what) {
  return static_cast<int>(integer_in(value, nullptr, what, std::numeric_limits<int>::min(),
                                     std::numeric_limits<int>::max()));
}

std::int64_t json_as_int64(const nlohmann::json& value, const char* what) {
  return integer_in(value, nullptr, what, std::numeric_limits<std::int64_t>::min(),
                    std::numeric_limits<std::int64_t>::max());
}

int json_int(const nlohmann::json& object, const char* key, const char* what) {
  return static_cast<int>(json_integer(object, key, what, std::numeric_limits<int>::min(),
                                       std::numeric_limits<int>::max()));
}

std::int64_t json_int64(const nlohmann::json& object, const char* key, const char* what) {
  return json_integer(object, key, what, std::numeric_limits<std::int64_t>::min(),
                      std::numeric_limits<std::int64_t>::max());
}

double json_number(const nlohmann::json& object, const char* key, const char* what) {
  const auto& value = json_member(object, key, what);
  if (!value.is_number()) {
    throw JournalError(fmt::format("{}: field \"{}\" must be a number, found {}", what, key, json_kind(value)));
  }
  return value.get<double>();
}

std::string json_string(const nlohmann::json& object, const char* key, const char* what) {
  const auto& value = json_member(object, key, what);
  if (!value.is_string()) {
    throw JournalError(fmt::format("{}: field \"{}\" must be a string, found {}", what, key, json_kind(value)));
  }
  return value.get<std::string>();
}

}  // namespace dlx::searcher::detail
