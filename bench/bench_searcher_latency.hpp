// SPDX-License-Identifier: Apache-2.0
#pragma once
// How long one searcher decision takes in memory: a method driven through a whole simulated run,
// every on_work_requested and on_validation timed with the real (steady) clock.
#include "dlx/config/experiment.hpp"

namespace dlx::bench {

struct DecisionLatency {
  long calls = 0;
  double mean_us = 0;
  double p99_us = 0;
  double max_us = 0;
};

DecisionLatency measure_decision_latency(const config::Experiment& experiment, int workers);

}  // namespace dlx::bench
