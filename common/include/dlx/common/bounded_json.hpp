// SPDX-License-Identifier: Apache-2.0
#pragma once
// JSON parsed with its nesting bounded while parsing. Hyperparameter values may be lists and
// mappings (Determined passes any YAML value through), but a crafted text nested a million deep
// would cost stack in every copy and dump that follows (nlohmann's recurse): the parse stops at
// `max_depth` instead. Header-only: its users already link nlohmann-json; dlx::common does not.
#include <string_view>

#include <nlohmann/json.hpp>

namespace dlx {

inline constexpr int kMaxHparamsDepth = 64;

struct BoundedJson {
  nlohmann::ordered_json value;  // discarded when the text is not JSON or is too deep
  bool too_deep = false;
};

inline BoundedJson parse_bounded_json(std::string_view text, int max_depth = kMaxHparamsDepth) {
  using Json = nlohmann::ordered_json;
  BoundedJson result;
  auto bounded = [&result, max_depth](int depth, Json::parse_event_t event, Json&) {
    if (depth >= max_depth &&
        (event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start)) {
      result.too_deep = true;
      return false;
    }
    return true;
  };
  result.value = Json::parse(text, bounded, /*allow_exceptions=*/false);
  return result;
}

}  // namespace dlx
