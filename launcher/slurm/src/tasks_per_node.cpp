// SPDX-License-Identifier: Apache-2.0
#include "dlx/slurm/tasks_per_node.hpp"

#include <fmt/format.h>

#include "dlx/env/environment.hpp"

namespace dlx::slurm {

namespace {

constexpr int kMaxNodes = 1'000'000;

[[noreturn]] void malformed(std::string_view variable, std::string_view spec) {
  throw env::EnvError(fmt::format(
      "{}={} is not a Slurm task count list (expected e.g. \"2(x3),1\")", variable, spec));
}

}  // namespace

std::vector<int> parse_tasks_per_node(std::string_view variable, std::string_view spec) {
  std::vector<int> out;
  if (spec.empty()) malformed(variable, spec);
  std::size_t start = 0;
  while (start <= spec.size()) {
    auto comma = spec.find(',', start);
    auto item = spec.substr(start, comma == std::string_view::npos ? spec.npos : comma - start);
    std::string_view count = item;
    int repeat = 1;
    if (auto paren = item.find('('); paren != std::string_view::npos) {
      // "<count>(x<repeat>)"
      if (!item.ends_with(')') || item.substr(paren, 2) != "(x") malformed(variable, spec);
      count = item.substr(0, paren);
      auto times = item.substr(paren + 2, item.size() - paren - 3);
      try {
        repeat = env::parse_non_negative_int(variable, times);
      } catch (const env::EnvError&) {
        malformed(variable, spec);
      }
    }
    int tasks = 0;
    try {
      tasks = env::parse_non_negative_int(variable, count);
    } catch (const env::EnvError&) {
      malformed(variable, spec);
    }
    if (repeat < 1 || out.size() + static_cast<std::size_t>(repeat) > kMaxNodes) {
      malformed(variable, spec);
    }
    out.insert(out.end(), static_cast<std::size_t>(repeat), tasks);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace dlx::slurm
