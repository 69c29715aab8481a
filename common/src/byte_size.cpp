// SPDX-License-Identifier: Apache-2.0
#include "dlx/common/byte_size.hpp"

#include <array>
#include <charconv>
#include <limits>
#include <utility>

#include <fmt/format.h>

namespace dlx {

namespace {

constexpr std::uint64_t kKilo = 1000, kKibi = 1024;
// No bare K/M/G: Slurm reads them as binary, most people as decimal; the B makes the unit explicit.
constexpr std::array<std::pair<std::string_view, std::uint64_t>, 11> kUnits{{
    {"", 1}, {"B", 1},
    {"kB", kKilo}, {"KB", kKilo}, {"MB", kKilo * kKilo}, {"GB", kKilo * kKilo * kKilo},
    {"TB", kKilo * kKilo * kKilo * kKilo},
    {"KiB", kKibi}, {"MiB", kKibi * kKibi}, {"GiB", kKibi * kKibi * kKibi}, {"TiB", kKibi * kKibi * kKibi * kKibi},
}};

}  // namespace

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
  std::uint64_t number = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error != std::errc{} || end == text.data()) return std::nullopt;
  std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  while (unit.starts_with(' ')) unit.remove_prefix(1);
  for (const auto& [name, factor] : kUnits) {
    if (unit != name) continue;
    if (number > std::numeric_limits<std::uint64_t>::max() / factor) return std::nullopt;
    return number * factor;
  }
  return std::nullopt;
}

std::string format_byte_size(std::uint64_t bytes) {
  constexpr std::array<const char*, 5> names{"B", "kB", "MB", "GB", "TB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1000 && unit + 1 < names.size()) {
    value /= 1000;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.{}f} {}", value, value < 10 ? 2 : value < 100 ? 1 : 0, names[unit]);
}

}  // namespace dlx
