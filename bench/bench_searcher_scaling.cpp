// SPDX-License-Identifier: Apache-2.0
// The scaling study. A search of W worker-seconds on n workers cannot end before W / n, and no
// configuration reaches the full length sooner than F = max_length x (seconds per length) + one
// task start after it is created, whatever n is. A seed in which ASHA misses the target counts its
// makespan, about W / n + F; a seed that reaches it, c + climb with c the winner's creation time
// (c shrinks with n, the climb does not). So the ratio T(4n) / T(n) tends to 1/4 only while W / n
// is large against F; the table prints W / n + F beside the measured makespans to show it.
#include "bench_searcher_scaling.hpp"

#include <fmt/format.h>

#include "bench_searcher_simulation.hpp"

namespace dlx::bench {
namespace {

struct AtWorkers {
  int workers = 0;
  std::vector<double> random, asha;  // time to target (or makespan) per seed
  int asha_reached = 0;
  double asha_makespan = 0;          // mean over the seeds
  double asha_work = 0;              // mean worker-seconds (training, start-ups, loads)
};

AtWorkers run_at(const ScalingStudy& study, int workers) {
  AtWorkers out;
  out.workers = workers;
  for (int s = 0; s < study.seeds; ++s) {
    const auto seed = static_cast<std::uint64_t>(study.first_seed + s);
    const auto random = run(bench_experiment("name: random", study.trials, study.max_length, seed), workers, seed,
                            study.target, study.noise);
    const auto asha = run(bench_experiment(study.asha, study.trials, study.max_length, seed), workers, seed,
                          study.target, study.noise);
    out.random.push_back(time_or_end(random));
    out.asha.push_back(time_or_end(asha));
    out.asha_reached += asha.time_to_target ? 1 : 0;
    out.asha_makespan += asha.result.makespan / study.seeds;
    out.asha_work += worker_seconds(asha, workers) / study.seeds;
  }
  return out;
}

}  // namespace

void print_scaling_study(const ScalingStudy& study) {
  const double climb = shortest_climb(study.max_length);
  fmt::print("# scaling: {{{}}} and random search, {} trials, seeds {}-{}; F = {} x {} s + {} s = {:.0f} s, the "
             "shortest climb to full length\n", study.asha, study.trials, study.first_seed,
             study.first_seed + study.seeds - 1, study.max_length, kSecondsPerLength, kTaskStartSeconds, climb);
  fmt::print("# {:>7} {:>10} {:>10} {:>8} {:>13} {:>11} {:>10} {:>11} {:>9}\n", "workers", "random_s", "asha_s",
             "reached", "asha_makespan", "asha_work_s", "W/n+F_s", "W/(n F)", "asha/rnd");
  std::vector<AtWorkers> rows;
  for (int n : study.workers) {
    rows.push_back(run_at(study, n));
    const auto& r = rows.back();
    fmt::print("  {:>7} {:>10.0f} {:>10.0f} {:>8} {:>13.0f} {:>11.0f} {:>10.0f} {:>11.2f} {:>9.3f}\n", n, mean(r.random),
               mean(r.asha), r.asha_reached, r.asha_makespan, r.asha_work, r.asha_work / n + climb,
               r.asha_work / n / climb, mean(r.asha) / mean(r.random));
  }
  fmt::print("# 4x the workers, T(4n) / T(n) (+- paired standard error over {} seeds):\n", study.seeds);
  fmt::print("# {:>9} {:>16} {:>16} {:>18}\n", "n -> 4n", "asha", "random", "(W/4n+F)/(W/n+F)");
  for (const auto& small : rows) {
    for (const auto& large : rows) {
      if (large.workers != 4 * small.workers) continue;
      fmt::print("  {:>9} {:>8.3f} +- {:.3f} {:>8.3f} +- {:.3f} {:>18.3f}\n",
                 fmt::format("{} -> {}", small.workers, large.workers), mean(large.asha) / mean(small.asha),
                 paired_ratio_error(large.asha, small.asha), mean(large.random) / mean(small.random),
                 paired_ratio_error(large.random, small.random),
                 scaling_bound(small.asha_work, large.asha_work, small.workers, climb));
    }
  }
}

}  // namespace dlx::bench
