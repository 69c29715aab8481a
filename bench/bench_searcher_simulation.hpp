// SPDX-License-Identifier: Apache-2.0
#pragma once
// What bench_searcher's studies share: the benchmark experiment, the simulated cluster's costs, one
// simulated run with its time to target, and the statistics over seeds (means, medians, paired
// standard errors of ratios).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dlx/config/experiment.hpp"
#include "simulated_runner.hpp"

namespace dlx::bench {

// The simulated cluster's costs.
constexpr double kSecondsPerLength = 10;      // one length unit: 10 s of training; a full trial 43 min
constexpr double kTaskStartSeconds = 5;       // an array task's start: scheduling, process, MPI
constexpr double kCheckpointLoadSeconds = 2;  // a resumed promotion loads its rung checkpoint

// The benchmark experiment: hyperparameters x, y uniform in [0, 1], `searcher` the searcher's
// keys without braces ("name: random"), `trials` of them, trained to `max_length` batches.
config::Experiment bench_experiment(const std::string& searcher, int trials, std::int64_t max_length,
                                    std::uint64_t seed);

// The noiseless final loss that the best `percent` of the search space reach (200,000 uniform points).
double top_percent(std::int64_t max_length, double percent);

struct Run {
  std::optional<double> time_to_target;
  simulation::SimulationResult result;
};

// One search of `searched` on `workers` simulated workers with the curve family of `seed` and
// `noise`; the time to target is when a configuration whose final loss is <= `target` first
// reports at max_length.
Run run(const config::Experiment& searched, int workers, std::uint64_t seed, double target, double noise);

// Time to target, or (not reached) the run's makespan: a search that never gets there costs all of it.
double time_or_end(const Run& r);

// The worker-seconds a run spent (training, task starts, checkpoint loads) on `workers` workers.
double worker_seconds(const Run& r, int workers);

// The shortest time from a configuration's creation to its report at `max_length`: one task start
// and the whole training, whatever the workers.
double shortest_climb(std::int64_t max_length);

// The ratio T(4n) / T(n) that a search of `work_n` worker-seconds on n workers and `work_4n` on 4n
// can reach at best when it ends with a climb of `climb` seconds: (W/4n + F) / (W/n + F).
double scaling_bound(double work_n, double work_4n, int n, double climb);

double mean(const std::vector<double>& values);
double median(std::vector<double> values);
// The standard error of mean(a) / mean(b) over paired samples (a_i, b_i), by the delta method.
double paired_ratio_error(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace dlx::bench
