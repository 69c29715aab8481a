// SPDX-License-Identifier: Apache-2.0
#pragma once
// ASHA's rung arithmetic (Li et al., "A System for Massively Parallel Hyperparameter Tuning"), with
// Determined's numbers (master/pkg/searcher/asha_stopping.go, makeRungs): rung k of R trains to
//   max(1, floor(max_length / divisor^(R-1-k)))      (in doubles, as Determined computes it)
// and keeps floor(n / divisor) of the n trials that reached it (at least 1). Pure functions,
// shared by `dlx plan` and the ASHA searcher.
#include <cstdint>
#include <vector>

namespace dlx::searcher {

struct Rung {
  int index = 0;
  std::int64_t length = 0;  // cumulative training length at this rung
  int trials = 0;           // trials expected to reach it
};

// Rungs for one bracket of `max_rungs` rungs. Where max_length is shorter than divisor^(R-1),
// Determined gives several bottom rungs the length 1, which one validation passes together; dlx
// keeps one rung per length (the lower duplicates are dropped), so such a bracket has fewer rungs.
std::vector<Rung> asha_rungs(int max_trials, double divisor, int max_rungs, std::int64_t max_length);

// Determined's top-1/divisor rule: how many of n results at a rung go on, before the "at least
// one" rule: floor(n / divisor), in doubles (divisor may be 2.5).
int asha_keep(int results, double divisor);

}  // namespace dlx::searcher
