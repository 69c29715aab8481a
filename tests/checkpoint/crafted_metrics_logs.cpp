// SPDX-License-Identifier: Apache-2.0
#include "crafted_metrics_logs.hpp"

#include <cstdint>
#include <string>
#include <utility>

#include "dlx/record/metrics_log.hpp"

namespace dlx::record::testing {

using Values = std::vector<std::pair<std::uint32_t, double>>;

std::vector<std::byte> names_then_empty_rows(std::size_t names, std::size_t bytes) {
  std::vector<std::byte> log;
  append_metrics_log_header(log);
  Values every;
  for (std::uint32_t id = 0; id < names; ++id) {
    append_metric_name_record(log, id, "metric-" + std::to_string(id));
    every.emplace_back(id, 1.0);
  }
  append_metric_row_record(log, MetricTableId::training, 1, 0, every);
  for (std::int64_t step = 2; log.size() < bytes; ++step)
    append_metric_row_record(log, MetricTableId::training, step, 0, Values{});
  return log;
}

std::vector<std::byte> repeated_steps(std::size_t increasing, std::size_t bytes) {
  std::vector<std::byte> log;
  append_metrics_log_header(log);
  append_metric_name_record(log, 0, "loss");
  const auto last = static_cast<std::int64_t>(increasing);
  for (std::int64_t step = 1; step <= last; ++step)
    append_metric_row_record(log, MetricTableId::training, step, 0, Values{{0, 1.0}});
  for (double value = 0; log.size() < bytes; value += 1)
    append_metric_row_record(log, MetricTableId::training, last, 0, Values{{0, value}});
  return log;
}

}  // namespace dlx::record::testing
