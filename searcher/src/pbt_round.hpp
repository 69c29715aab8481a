#pragma once
// PBT's rounds as pure functions: the first round's trials, and each later round's trials from
// the results of the round before (truncation selection, Jaderberg et al. 2017).
//
// Trial ids: member m of round r is trial r * population_size + m, which is also the ticket that
// runs it (PBT's ticket_count is population_size x num_rounds, trial_plan.cpp).
//
// Round r > 0, from round r - 1's results:
//   1. A member's result is usable when its trial reported a finite metric at its target; the
//      usable ones are ranked best first by the oriented metric (ties: the lower member first).
//   2. n = max(1, floor(truncate_fraction x population_size)). The top n usable members are the
//      parents. Members without a usable result (failed, diverged) rank below all others; the
//      bottom n of this ranking are replaced, parents excepted, and so is every member without
//      a usable result even beyond n (it has nothing to continue from).
//   3. A replaced member exploits a parent drawn uniformly from the top n (stream (seed, child
//      trial, kPbtSlotBase)): it starts from the parent trial's checkpoint at the parent's length
//      with the parent's hyperparameters explored (pbt_explore.hpp).
//   4. Every other member continues from its own previous trial's checkpoint, at that trial's
//      length, with the same hyperparameters.
//   5. When no member has a usable result there is nobody to copy: every member restarts from
//      scratch with random_point(child trial).
//   Each trial trains from its start length to start length + length_per_round.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlx/config/experiment.hpp"

namespace dlx::searcher::detail {

struct PbtTrialPlan {
  nlohmann::ordered_json hparams;
  std::int64_t start_length = 0;
  std::optional<int> checkpoint_trial;
  std::int64_t target_length = 0;
  std::string reason;
};

// How round r - 1's trial of one member ended.
struct PbtOutcome {
  bool usable = false;  // reported a finite metric at its target
  double metric = 0;
  std::int64_t length = 0;  // the length it reported at
  nlohmann::ordered_json hparams;
};

std::vector<PbtTrialPlan> plan_first_round(const config::Experiment& experiment);

// `previous[m]` is member m's outcome in round `round - 1`.
std::vector<PbtTrialPlan> plan_next_round(const config::Experiment& experiment, int round,
                                          const std::vector<PbtOutcome>& previous);

// n in rule 2.
int pbt_truncate_count(const config::PbtOptions& options);

}  // namespace dlx::searcher::detail
