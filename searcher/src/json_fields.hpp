// SPDX-License-Identifier: Apache-2.0
#pragma once
// Typed reads of the JSON the searcher reads back (journal events, Work, Decision, rankings): each
// failure is a JournalError that names the field and what is wrong with it ("field \"trial\":
// 1e+300 is not an integer from -2147483648 to 2147483647"). nlohmann's own get<>() would throw its
// library text ("[json.exception.type_error.302] ..."), or silently convert an out-of-range
// double to int (undefined behaviour).
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace dlx::searcher::detail {

// `what` names the object in messages ("work", "event").
const nlohmann::json& json_member(const nlohmann::json& object, const char* key, const char* what);
std::int64_t json_integer(const nlohmann::json& object, const char* key, const char* what, std::int64_t low,
                          std::int64_t high);
int json_int(const nlohmann::json& object, const char* key, const char* what);
std::int64_t json_int64(const nlohmann::json& object, const char* key, const char* what);
double json_number(const nlohmann::json& object, const char* key, const char* what);
std::string json_string(const nlohmann::json& object, const char* key, const char* what);

// A value (not a field) as an int or int64: an integer in range, else a JournalError naming
// `what`. For the methods' snapshots, where nlohmann's get<int>() of a crafted 1e300 would be
// undefined behaviour.
int json_as_int(const nlohmann::json& value, const char* what);
std::int64_t json_as_int64(const nlohmann::json& value, const char* what);

// "a string", "an array", ...: the kind of a value, for messages.
const char* json_kind(const nlohmann::json& value);

}  // namespace dlx::searcher::detail
