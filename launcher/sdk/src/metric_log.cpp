// SPDX-License-Identifier: Apache-2.0
#include "metric_log.hpp"

#include <fmt/format.h>

namespace dlx::detail {

bool has_names(const Metrics& metrics, const std::vector<std::string>& names) {
  if (metrics.size() != names.size()) return false;
  auto name = names.begin();
  for (const auto& [metric, value] : metrics)
    if (metric != *name++) return false;
  return true;
}

std::string format_metric_line(std::optional<std::int64_t> trial_id, std::int64_t step,
                               const char* kind, const Metrics& metrics) {
  std::string line = trial_id ? fmt::format("dlx: trial {} step {} {}", *trial_id, step, kind)
                              : fmt::format("dlx: step {} {}", step, kind);
  for (const auto& [name, value] : metrics) line += fmt::format(" {}={:.6g}", name, value);
  return line;
}

}  // namespace dlx::detail
