// SPDX-License-Identifier: Apache-2.0
#pragma once
// What read_status (status_report.hpp) read, for a caller that shows more than the table
// (dlx report): each row's trial record (nullopt: none yet, or unreadable) and the searcher's state
// (nullopt: no journal, or one that could not be replayed).
#include <optional>
#include <vector>

#include "dlx/record/system_series.hpp"
#include "dlx/record/trial_record.hpp"
#include "dlx/searcher/search_state.hpp"

namespace dlx::cli {

struct StatusSources {
  std::vector<std::optional<record::TrialRecord>> records;
  // Each row's system samples (dlx/record/system_series.hpp): empty when it has none, or they
  // could not be read (said in StatusReport::warnings).
  std::vector<std::vector<record::SystemSeries>> system;
  std::optional<searcher::SearchState> search;
};

}  // namespace dlx::cli
