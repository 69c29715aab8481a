// SPDX-License-Identifier: Apache-2.0
#include "hparam_warnings.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dlx/common/id_ranges.hpp"
#include "dlx/record/trial_record.hpp"
#include "status_report.hpp"

namespace dlx::cli {

namespace {

std::string without_prefix(const std::string& message) {
  constexpr std::string_view kPrefix = "dlx: warning: ";
  return message.starts_with(kPrefix) ? message.substr(kPrefix.size()) : message;
}

bool finished(const TrialRow& row) { return !row.record_state.empty() && row.record_state != "running"; }

// A default the trainer used for a name the experiment does not define, with no defined name close
// to it (both SDKs say "did you mean '...'?" when there is one): most likely a knob left at its
// default on purpose, which needs no line of its own when there are several.
bool plain_default(const record::HparamWarning& warning) {
  return warning.kind == "default" && warning.message.find("did you mean '") == std::string::npos;
}

// The plain defaults (above) that the same trials used, two or more, as one line.
std::string defaults_line(const std::vector<std::string>& names, const std::vector<int>& ids) {
  return fmt::format("{} {}: the trainer used its own defaults for {} hyperparameters the experiment does not "
                     "define: {} (to choose them, add them to the experiment's hyperparameters:; `dlx logs` shows "
                     "each default)",
                     ids.size() == 1 ? "trial" : "trials", id_ranges(ids), names.size(), fmt::join(names, ", "));
}

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
  // Plain defaults used by the same trials, several of them: one line in the first one's place.
  std::map<std::vector<int>, std::vector<std::string>> plain_by_trials;  // names, in order
  std::map<std::string, std::string> name_of;                            // message -> name
  for (const auto& row : rows) {
    for (const auto& warning : row.hparam_warnings) {
      if (plain_default(warning)) name_of.emplace(without_prefix(warning.message), warning.name);
    }
  }
  for (const auto& key : order) {
    if (const auto name = name_of.find(key); name != name_of.end()) {
      plain_by_trials[trials_of[key]].push_back(name->second);
    }
  }
  std::set<std::vector<int>> folded_said;
  for (const auto& key : order) {
    if (const auto name = name_of.find(key); name != name_of.end()) {
      const auto& ids = trials_of[key];
      const auto& names = plain_by_trials[ids];
      if (names.size() > 1) {
        if (folded_said.insert(ids).second) lines.push_back(defaults_line(names, ids));
        continue;
      }
    }
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
