#pragma once
// ASHA's rung arithmetic (Li et al., "A System for Massively Parallel Hyperparameter Tuning"):
// rung k of R trains to max_length / divisor^(R-1-k) and keeps about 1/divisor of the trials that
// reached the rung below it. Pure functions, shared by `dlx plan` and the ASHA searcher.
#include <cstdint>
#include <vector>

namespace dlx::searcher {

struct Rung {
  int index = 0;
  std::int64_t length = 0;  // cumulative training length at this rung
  int trials = 0;           // trials expected to reach it
};

// Rungs for one bracket. Rungs that would train for less than one unit are dropped, so a short
// max_length gets fewer rungs than max_rungs.
std::vector<Rung> asha_rungs(int max_trials, int divisor, int max_rungs, std::int64_t max_length);

}  // namespace dlx::searcher
