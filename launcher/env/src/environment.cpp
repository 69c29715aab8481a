// SPDX-License-Identifier: Apache-2.0
#include "dlx/env/environment.hpp"

#include <charconv>
#include <limits>

#include <fmt/format.h>

extern char** environ;  // NOLINT: POSIX

namespace dlx::env {

EnvMap current_environment() {
  EnvMap out;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    auto eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    out.emplace(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
  }
  return out;
}

std::optional<std::string> lookup(const EnvMap& env, std::string_view name) {
  auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> lookup_first(const EnvMap& env,
                                        std::initializer_list<std::string_view> names) {
  for (auto name : names) {
    if (auto value = lookup(env, name)) return value;
  }
  return std::nullopt;
}

std::int64_t parse_non_negative(std::string_view name, std::string_view value) {
  std::int64_t out = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, out);
  if (value.empty() || ec != std::errc() || ptr != end || out < 0) {
    throw EnvError(fmt::format("{}={} is not a non-negative integer", name, value));
  }
  return out;
}

int parse_non_negative_int(std::string_view name, std::string_view value) {
  std::int64_t wide = parse_non_negative(name, value);
  if (wide > std::numeric_limits<int>::max()) {
    throw EnvError(fmt::format("{}={} is too large", name, value));
  }
  return static_cast<int>(wide);
}

std::optional<int> lookup_int(const EnvMap& env, std::string_view name) {
  auto value = lookup(env, name);
  if (!value) return std::nullopt;
  return parse_non_negative_int(name, *value);
}

}  // namespace dlx::env
