// SPDX-License-Identifier: Apache-2.0
#include "bench_searcher_simulation.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "dlx/config/parse.hpp"
#include "dlx/searcher/method.hpp"

namespace dlx::bench {

config::Experiment bench_experiment(const std::string& searcher, int trials, std::int64_t max_length,
                                    std::uint64_t seed) {
  return config::parse_experiment(
      fmt::format("name: bench\nentrypoint: x\nseed: {}\nsearcher: {{{}, metric: loss, max_trials: {}, "
                  "max_length: {{batches: {}}}}}\nhyperparameters:\n"
                  "  x: {{type: double, minval: 0, maxval: 1}}\n  y: {{type: double, minval: 0, maxval: 1}}\n",
                  seed, searcher, trials, max_length),
      "bench.yaml");
}

double top_percent(std::int64_t max_length, double percent) {
  std::mt19937_64 random(12345);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<double> losses;
  for (int i = 0; i < 200'000; ++i) {
    nlohmann::ordered_json point{{"x", unit(random)}, {"y", unit(random)}};
    losses.push_back(simulation::synthetic_final_loss(point, max_length));
  }
  const auto rank = static_cast<std::ptrdiff_t>(percent / 100 * static_cast<double>(losses.size()));
  std::nth_element(losses.begin(), losses.begin() + rank, losses.end());
  return losses[static_cast<std::size_t>(rank)];
}

Run run(const config::Experiment& searched, int workers, std::uint64_t seed, double target, double noise) {
  auto method = searcher::make_method(searched);
  simulation::SimulationOptions options;
  options.workers = workers;
  options.tickets = searcher::ticket_count(searched);
  options.seconds_per_length = kSecondsPerLength;
  options.task_start_seconds = kTaskStartSeconds;
  options.checkpoint_load_seconds = kCheckpointLoadSeconds;
  options.wait_first_retry_seconds = 0.5;  // dlx-launch's back-off: 0.5 s doubling to 10 s
  options.wait_retry_seconds = 10;
  options.curve = simulation::synthetic_curve(seed, noise, searched.searcher.max_length->value);
  Run out;
  out.result = simulation::simulate(*method, options);
  if (!out.result.violations.empty()) throw std::runtime_error("protocol violation: " + out.result.violations.front());
  const auto max_length = searched.searcher.max_length->value;
  out.time_to_target = out.result.first_time(max_length, [&](int trial, const simulation::Validation&) {
    return simulation::synthetic_final_loss(out.result.trials.at(trial).hparams, max_length) <= target;
  });
  return out;
}

double time_or_end(const Run& r) { return r.time_to_target.value_or(r.result.makespan); }

double worker_seconds(const Run& r, int workers) {
  return r.result.occupancy(r.result.makespan, true) * r.result.makespan * workers;
}

double shortest_climb(std::int64_t max_length) {
  return static_cast<double>(max_length) * kSecondsPerLength + kTaskStartSeconds;
}

double scaling_bound(double work_n, double work_4n, int n, double climb) {
  return (work_4n / (4.0 * n) + climb) / (work_n / n + climb);
}

double mean(const std::vector<double>& values) {
  double sum = 0;
  for (double value : values) sum += value;
  return sum / static_cast<double>(values.size());
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const auto n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The residuals a_i - R b_i, whose mean is zero at R = mean(a) / mean(b), carry the ratio's
// sampling error.
double paired_ratio_error(const std::vector<double>& a, const std::vector<double>& b) {
  const auto n = static_cast<double>(a.size());
  if (a.size() < 2) return 0;
  const double ratio = mean(a) / mean(b);
  double squares = 0;
  for (std::size_t i = 0; i < a.size(); ++i) squares += std::pow(a[i] - ratio * b[i], 2);
  return std::sqrt(squares / (n - 1)) / std::sqrt(n) / mean(b);
}

}  // namespace dlx::bench
