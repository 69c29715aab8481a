// SPDX-License-Identifier: Apache-2.0
#pragma once
// How an ASHA experiment splits into brackets. async_halving is one bracket of max_rungs rungs
// holding every trial; adaptive_asha (adaptive_asha.cpp) runs several brackets with different rung
// counts side by side. Pure functions of the experiment, shared by the method and ticket_count().
#include <vector>

#include "dlx/config/experiment.hpp"
#include "dlx/searcher/asha_rungs.hpp"

namespace dlx::searcher::detail {

struct AshaBracketPlan {
  std::vector<Rung> rungs;  // asha_rungs(trials, divisor, rung count, max_length)
  int trials = 0;           // new trials the bracket gets
};

// The brackets of an async_halving or adaptive_asha experiment, most rungs first.
std::vector<AshaBracketPlan> asha_brackets(const config::Experiment& experiment);
std::vector<AshaBracketPlan> adaptive_asha_brackets(const config::Experiment& experiment);

// Which bracket new trial t (0 <= t < total trials) joins: trials are dealt out in proportion to
// each bracket's share, interleaved (the bracket furthest behind its fair share of the trials so
// far gets the next one, ties to the lower bracket), so every bracket makes progress from the
// start and none is ever more than one trial off its share.
std::vector<int> spread_trials_over_brackets(const std::vector<AshaBracketPlan>& brackets);

// The most promotions in one bracket that need a fresh ticket (asha.cpp explains the bound).
int asha_resume_bound(const AshaBracketPlan& bracket, double divisor);

// The trials of all brackets together: max_trials, except that explicit bracket_rungs with more
// brackets than max_trials share out give each bracket at least one trial (as Determined does).
int asha_trial_total(const config::Experiment& experiment);

}  // namespace dlx::searcher::detail
