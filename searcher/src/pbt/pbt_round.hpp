// SPDX-License-Identifier: Apache-2.0
#pragma once
// PBT's rounds as pure functions: the first round's trials, and each later round's trials from
// the results of the round before: Determined's truncation selection (facts from its pbt.go,
// removed from Determined after 0.17; the code is ours).
//
// Tickets: member m of round r runs in ticket r * population_size + m (PBT's ticket_count is
// population_size x num_rounds, trial_plan.cpp). Trial ids, as Determined numbers them: round 0's
// members are trials 0 .. P-1; a member that goes on into the next round keeps its trial id (it
// resumes from its own checkpoint in the next round's ticket); a replaced member's slot gets a new
// trial, numbered on from the last one, in the order of the parents it copies (the copy of the best
// first). With n = int(truncate_fraction x P) (Determined's rounding: truncated toward zero, in
// doubles, so 0.2 x 4 replaces nobody), round r >= 1 starts trials P + (r-1) n .. P + r n - 1.
//
// Round r > 0, from round r - 1's results:
//   1. A member's result is usable when its trial reported a finite metric at its target; the
//      members are ranked best first by the oriented metric (ties: the lower trial id first),
//      those without a usable result last (Determined ranks an exited trial as the worst value).
//   2. The bottom n of that ranking are replaced, and so is every member without a usable result
//      even above the bottom n (dlx fills every ticket; Determined would let the population shrink
//      by such a member). Only with more than n failures in one round does a round start more
//      than n new trials (and the later rounds' ids move up accordingly).
//   3. The k-th replaced slot (in slot order) gets a copy of the k-th best usable member (cycling
//      when fewer usable members than replaced slots): it starts from the parent's checkpoint at
//      the parent's length with the parent's hyperparameters explored (pbt_explore.hpp). So
//      normally each of the top n is copied exactly once (Determined's rule).
//   4. Every other member continues from its own checkpoint, at its length, with the same
//      hyperparameters and trial id.
//   5. When no member has a usable result there is nobody to copy: every member restarts from
//      scratch as a new trial with random_point(its new trial id).
//   Each trial trains from its start length to start length + length_per_round.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlx/config/experiment.hpp"

namespace dlx::searcher::detail {

struct PbtTrialPlan {
  int trial = 0;  // the trial id this ticket trains
  nlohmann::ordered_json hparams;
  std::int64_t start_length = 0;
  std::optional<int> checkpoint_trial;
  std::int64_t target_length = 0;
  std::string reason;
};

// How round r - 1's trial of one member ended.
struct PbtOutcome {
  int trial = 0;        // the member's trial in that round
  bool usable = false;  // reported a finite metric at its target
  double metric = 0;
  std::int64_t length = 0;  // the length it reported at
  nlohmann::ordered_json hparams;
};

std::vector<PbtTrialPlan> plan_first_round(const config::Experiment& experiment);

// `previous[m]` is member m's outcome in round `round - 1`; `next_trial` the first unused trial id.
std::vector<PbtTrialPlan> plan_next_round(const config::Experiment& experiment, int round,
                                          const std::vector<PbtOutcome>& previous, int next_trial);

// n: int(truncate_fraction x population_size), Determined's count of members replaced per round.
int pbt_truncate_count(const config::PbtOptions& options);

// The first new trial id of `round` when no round has more than n failures: 0 for round 0, else
// P + (round - 1) n; and the trials of the whole run: P + (num_rounds - 1) n.
int pbt_first_new_trial(const config::PbtOptions& options, int round);
int pbt_trial_total(const config::PbtOptions& options);

}  // namespace dlx::searcher::detail
