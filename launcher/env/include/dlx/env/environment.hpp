// SPDX-License-Identifier: Apache-2.0
#pragma once
// The process environment as a plain map, so that everything computed from it (Slurm placement,
// the trial contract, the torchrun variables) is a pure function that tests drive with tables.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "dlx/common/error.hpp"

namespace dlx::env {

using EnvMap = std::map<std::string, std::string, std::less<>>;

// A variable holds a value the reader cannot use; what() names the variable and the value.
class EnvError : public Error {
 public:
  using Error::Error;
};

// A copy of `environ`.
EnvMap current_environment();

// The value of `name`, or nullopt when unset (an empty value is returned as "").
std::optional<std::string> lookup(const EnvMap& env, std::string_view name);

// The first of `names` that is set.
std::optional<std::string> lookup_first(const EnvMap& env,
                                        std::initializer_list<std::string_view> names);

// Strict decimal parsing; EnvError "<name>=<value> is not a non-negative integer" otherwise.
std::int64_t parse_non_negative(std::string_view name, std::string_view value);
int parse_non_negative_int(std::string_view name, std::string_view value);

// lookup + parse_non_negative_int; nullopt when unset.
std::optional<int> lookup_int(const EnvMap& env, std::string_view name);

}  // namespace dlx::env
