// SPDX-License-Identifier: Apache-2.0
#pragma once
// `dlx status` output from a StatusReport: the table (with '#' lines in the nccl-tests manner)
// and the JSON document, as strings, so that --watch can write a whole frame at once.
#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "dlx/config/experiment.hpp"
#include "status_report.hpp"

namespace dlx::cli {

// Whether the table gets a sparkline column: always (--sparklines), never (stdout is not a
// terminal), or when the table with it still fits `columns` terminal columns.
struct SparklineChoice {
  bool always = false;
  std::optional<std::size_t> columns;  // a terminal's width; nullopt (and not always): never
};

// `progress_lines`: '#' lines (each ending in "\n") put under the experiment's two header lines;
// --watch's time and progress. Empty for a plain `dlx status`.
std::string render_status_table(const StatusReport& report, const config::Experiment& experiment,
                                const SparklineChoice& sparklines, const std::string& progress_lines = "");

nlohmann::ordered_json status_json(const StatusReport& report, const config::Experiment& experiment);

}  // namespace dlx::cli
