// SPDX-License-Identifier: Apache-2.0
#include "bench_searcher_latency.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <vector>

#include "dlx/searcher/method.hpp"
#include "simulated_runner.hpp"

namespace dlx::bench {

namespace {

using Clock = std::chrono::steady_clock;

// Forwards to the method under test and records how long each decision took.
class TimedMethod final : public searcher::Method {
 public:
  explicit TimedMethod(std::unique_ptr<searcher::Method> inner) : inner_(std::move(inner)) {}
  searcher::Work on_work_requested(int ticket) override {
    const auto start = Clock::now();
    auto work = inner_->on_work_requested(ticket);
    record(start);
    return work;
  }
  searcher::Decision on_validation(int trial, std::int64_t length, double metric) override {
    const auto start = Clock::now();
    auto decision = inner_->on_validation(trial, length, metric);
    record(start);
    return decision;
  }
  void on_trial_exited(int trial, searcher::ExitKind how) override { inner_->on_trial_exited(trial, how); }
  nlohmann::json snapshot() const override { return inner_->snapshot(); }
  void restore(const nlohmann::json& state) override { inner_->restore(state); }

  std::vector<double> microseconds;

 private:
  void record(Clock::time_point start) {
    microseconds.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  std::unique_ptr<searcher::Method> inner_;
};

}  // namespace

DecisionLatency measure_decision_latency(const config::Experiment& experiment, int workers) {
  TimedMethod method(searcher::make_method(experiment));
  simulation::SimulationOptions options;
  options.workers = workers;
  options.tickets = searcher::ticket_count(experiment);
  options.curve = simulation::synthetic_curve(99, 0.1, experiment.searcher.max_length->value);
  simulation::simulate(method, options);
  auto& samples = method.microseconds;
  DecisionLatency latency;
  latency.calls = static_cast<long>(samples.size());
  if (samples.empty()) return latency;
  latency.mean_us = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  std::sort(samples.begin(), samples.end());
  latency.p99_us = samples[samples.size() * 99 / 100];
  latency.max_us = samples.back();
  return latency;
}

}  // namespace dlx::bench
