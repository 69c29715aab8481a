// SPDX-License-Identifier: Apache-2.0
// referenced_checkpoints() for PBT, read from the method's snapshot (pbt.cpp: {"trials": [...]},
// one record per planned ticket, index = ticket = round x population_size + member, naming its trial).
#include <algorithm>

#include <fmt/format.h>

#include "dlx/searcher/references.hpp"

namespace dlx::searcher {

std::vector<CheckpointReference> referenced_checkpoints(const config::Experiment& experiment,
                                                        const nlohmann::json& method_snapshot) {
  std::vector<CheckpointReference> references;
  if (experiment.searcher.name != config::SearcherName::pbt) return references;
  const auto& trials = method_snapshot.at("trials");
  const int population = experiment.searcher.pbt.population_size;
  const int planned_rounds = static_cast<int>(trials.size()) / population;
  const bool more_rounds = planned_rounds < experiment.searcher.pbt.num_rounds;
  for (int ticket = 0; ticket < static_cast<int>(trials.size()); ++ticket) {
    const auto& trial = trials[static_cast<std::size_t>(ticket)];
    const int id = trial.at("trial").get<int>();
    const bool unfinished = trial.at("status") == "planned";
    if (unfinished && !trial.at("checkpoint_trial").is_null()) {
      references.push_back({trial.at("checkpoint_trial").get<int>(),
                            trial.at("start_length").get<std::int64_t>(),
                            fmt::format("PBT round {}: trial {} starts from it", ticket / population, id)});
    }
    // The latest round's results are the next round's possible parents (and its own restart point).
    if (more_rounds && ticket / population == planned_rounds - 1 && trial.at("status") == "reported") {
      references.push_back({id, trial.at("length").get<std::int64_t>(),
                            fmt::format("PBT: a possible parent of round {} (planned when round {} "
                                        "has finished)", planned_rounds, planned_rounds - 1)});
    }
  }
  // Stable: of two reasons for one checkpoint, the first (a planned start) is kept.
  std::stable_sort(references.begin(), references.end(), [](const auto& a, const auto& b) {
    return a.trial != b.trial ? a.trial < b.trial : a.length < b.length;
  });
  references.erase(std::unique(references.begin(), references.end()), references.end());
  return references;
}

}  // namespace dlx::searcher
