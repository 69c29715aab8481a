// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reading the small text files the kernel keeps under /proc and /sys/fs/cgroup, for the system
// sampler (process_usage.cpp) and the OOM count (oom_kills.cpp).
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "dlx/common/durable_file.hpp"

namespace dlx::launch::kernel_files {

// A /proc or cgroup file (regular files that fstat calls empty: read to their end), nullopt when
// it cannot be read (its process has exited, the cgroup is gone).
inline std::optional<std::string> slurp(const std::filesystem::path& path) {
  try {
    return read_small_file(path, std::size_t{1} << 20);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

template <typename T>
std::optional<T> parse_number(std::string_view text) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  return value;
}

// "key value" lines (cpu.stat, memory.events, /proc/<pid>/io with "key: value"): the value of
// `key`.
inline std::optional<std::uint64_t> keyed_value(std::string_view text, std::string_view key) {
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (line.starts_with(key) && line.size() > key.size() && (line[key.size()] == ' ' || line[key.size()] == ':')) {
      line.remove_prefix(key.size() + 1);
      while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      return parse_number<std::uint64_t>(line);
    }
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace dlx::launch::kernel_files
