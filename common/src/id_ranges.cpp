// SPDX-License-Identifier: Apache-2.0
#include "dlx/common/id_ranges.hpp"

#include <cstddef>

#include <fmt/format.h>

namespace dlx {

std::string id_ranges(const std::vector<int>& ids) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    parts.push_back(j == i ? std::to_string(ids[i]) : fmt::format("{}-{}", ids[i], ids[j]));
    i = j + 1;
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace dlx
