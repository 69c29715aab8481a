// SPDX-License-Identifier: Apache-2.0
// referenced_checkpoints(SearchState): the method's references (PBT) and the paused trials' (ASHA).
#include <algorithm>

#include <fmt/format.h>

#include "dlx/searcher/references.hpp"
#include "dlx/searcher/search_state.hpp"

namespace dlx::searcher {

std::vector<CheckpointReference> referenced_checkpoints(const SearchState& state) {
  // to_json() carries the method's snapshot (SearchState offers the method only to writers).
  auto references = referenced_checkpoints(state.experiment(), state.to_json().at("method"));
  // PBT pauses every member at the end of a round; its own references (above) say which of them a
  // later round still loads. A replaced member stays paused for good: its checkpoint is free.
  const bool pbt = state.experiment().searcher.name == config::SearcherName::pbt;
  for (const auto& [id, trial] : state.trials()) {
    if (pbt) break;
    if (trial.status != "paused" || trial.last_length <= 0) continue;
    references.push_back({id, trial.last_length,
                          fmt::format("trial {} paused at length {}; a promotion resumes it from "
                                      "here", id, trial.last_length)});
  }
  std::stable_sort(references.begin(), references.end(), [](const auto& a, const auto& b) {
    return a.trial != b.trial ? a.trial < b.trial : a.length < b.length;
  });
  references.erase(std::unique(references.begin(), references.end()), references.end());
  return references;
}

std::map<std::int64_t, std::string> referenced_steps_of(
    const std::vector<CheckpointReference>& references, int trial) {
  std::map<std::int64_t, std::string> steps;
  for (const auto& reference : references)
    if (reference.trial == trial) steps.emplace(reference.length, reference.why);
  return steps;
}

}  // namespace dlx::searcher
