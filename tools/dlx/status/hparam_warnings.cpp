// SPDX-License-Identifier: Apache-2.0
#include "hparam_warnings.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dlx/common/id_ranges.hpp"
#include "status_report.hpp"

namespace dlx::cli {

namespace {

std::string without_prefix(const std::string& message) {
  constexpr std::string_view kPrefix = "dlx: warning: ";
  return message.starts_with(kPrefix) ? message.substr(kPrefix.size()) : message;
}

bool finished(const TrialRow& row) { return !row.record_state.empty() && row.record_state != "running"; }

}  // namespace

std::vector<std::string> hparam_warning_lines(const std::vector<TrialRow>& rows) {
  // A defined name every finished trial left unread: one line for the experiment.
  std::size_t finished_trials = 0;
  std::map<std::string, std::size_t> unread_by_finished;
  for (const auto& row : rows) {
    if (!finished(row)) continue;
    ++finished_trials;
    for (const auto& warning : row.hparam_warnings) {
      if (warning.kind == "unread") ++unread_by_finished[warning.name];
    }
  }
  std::set<std::string> never_read;
  for (const auto& [name, count] : unread_by_finished) {
    if (count == finished_trials) never_read.insert(name);
  }
  // Every other warning once, with the trials that said it, in order of first appearance.
  std::vector<std::string> order;
  std::map<std::string, std::vector<int>> trials_of;
  std::vector<std::string> lines;
  std::set<std::string> said_never_read;
  for (const auto& row : rows) {
    for (const auto& warning : row.hparam_warnings) {
      if (warning.kind == "unread" && never_read.contains(warning.name)) {
        if (said_never_read.insert(warning.name).second) {
          order.push_back("\n" + warning.name);  // a key no message has: the experiment's line
        }
        continue;
      }
      const auto text = without_prefix(warning.message);
      auto& ids = trials_of[text];
      if (ids.empty()) order.push_back(text);
      if (ids.empty() || ids.back() != row.spec.id) ids.push_back(row.spec.id);
    }
  }
  for (const auto& key : order) {
    if (key.starts_with('\n')) {
      lines.push_back(fmt::format("hyperparameter '{}' is defined but never read by any trial ({} finished): "
                                  "remove it from the experiment, or read it in the trainer",
                                  key.substr(1), finished_trials));
      continue;
    }
    const auto& ids = trials_of[key];
    lines.push_back(fmt::format("{} {}: {}", ids.size() == 1 ? "trial" : "trials", id_ranges(ids), key));
  }
  return lines;
}

}  // namespace dlx::cli
