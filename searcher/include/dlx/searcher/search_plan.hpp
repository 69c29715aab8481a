// SPDX-License-Identifier: Apache-2.0
#pragma once
// What an experiment's searcher will run, as data: `dlx plan` prints it, and a unit test runs each
// method to completion on the simulated cluster and checks the run against it (trial counts,
// bracket membership, rung lengths, PBT rounds, the array and its throttle).
#include <string>
#include <vector>

#include "dlx/config/experiment.hpp"
#include "dlx/searcher/asha_rungs.hpp"

namespace dlx::searcher {

// One ASHA bracket (async_halving has one; adaptive_asha several, most rungs first).
struct PlannedBracket {
  std::vector<Rung> rungs;     // lengths; `trials` is how many are expected to reach each rung
  int trials = 0;              // new trials the bracket gets
  std::vector<int> trial_ids;  // which ones, in order
};

// One PBT round: population_size tickets, each training one member for length_per_round.
struct PlannedPbtRound {
  int round = 0;
  int first_ticket = 0;         // tickets first_ticket .. first_ticket + population_size - 1
  int continued = 0;            // members that go on from their own checkpoint (same trial id)
  int replaced = 0;             // the worst members, replaced by copies of the best
  std::vector<int> new_trials;  // the trial ids that start in this round (round 0: every member)
};

struct SearchPlan {
  config::SearcherName method = config::SearcherName::single;
  int trials = 0;    // distinct trials
  int tickets = 0;   // units of work (ASHA's promotion variant and PBT resume trials in later ones)
  int tasks = 0;     // array tasks: `tickets`, or fewer that run several tickets in turn (max_array_tasks)
  int throttle = 0;  // `%N` of --array: at most N tasks at once; 0: no throttle (it would not limit)
  std::string array;  // sbatch's --array value
  std::vector<PlannedBracket> brackets;  // async_halving, adaptive_asha
  std::vector<PlannedPbtRound> rounds;   // pbt
};

// Throws config::ConfigError as trial_count does.
SearchPlan plan_search(const config::Experiment& experiment);

}  // namespace dlx::searcher
