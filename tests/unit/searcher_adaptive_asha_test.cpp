// SPDX-License-Identifier: Apache-2.0
// adaptive_asha: the bracket layout by mode (Determined's rules), the spread of trials over the
// brackets, and whole runs on the simulated cluster.
#include <catch2/catch.hpp>

#include <cmath>

#include <fmt/format.h>

#include "asha/asha_layout.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/searcher/method.hpp"
#include "simulated_runner.hpp"

using namespace dlx;

namespace {

config::Experiment adaptive(int max_trials, int divisor, int max_rungs, int max_length, const std::string& mode,
                            bool stop_once) {
  return config::parse_experiment(
      fmt::format("name: t\nentrypoint: x\nseed: 42\nsearcher: {{name: adaptive_asha, metric: loss, max_trials: {}, "
                  "divisor: {}, max_rungs: {}, max_length: {{batches: {}}}, mode: {}, stop_once: {}}}\n"
                  "hyperparameters:\n  x: {{type: double, minval: 0, maxval: 1}}\n"
                  "  y: {{type: double, minval: 0, maxval: 1}}\n",
                  max_trials, divisor, max_rungs, max_length, mode, stop_once),
      "t.yaml");
}

}  // namespace

TEST_CASE("adaptive_asha brackets by mode", "[searcher][adaptive_asha]") {
  struct Row {
    int max_trials, divisor, max_rungs, max_length;
    std::string mode;
    std::vector<int> rungs;   // per bracket
    std::vector<int> trials;  // per bracket
  };
  auto row = GENERATE(values<Row>({
      {64, 4, 5, 64, "aggressive", {4}, {64}},  // 4 rungs fit the length (1, 4, 16, 64) and 64 trials
      {64, 4, 5, 64, "standard", {4, 3, 2}, {45, 14, 5}},
      {64, 4, 5, 64, "conservative", {4, 3, 2, 1}, {43, 14, 5, 2}},
      {100, 3, 3, 1000, "conservative", {3, 2, 1}, {55, 27, 18}},
      {3, 4, 5, 1000, "standard", {1}, {3}},  // fewer trials than the divisor: one rung, random search
      {20, 2, 5, 3, "standard", {2, 1}, {10, 10}},  // the length allows 2 rungs (1, 3)
  }));
  INFO(row.mode << " " << row.max_trials << " trials");
  auto brackets = searcher::detail::adaptive_asha_brackets(
      adaptive(row.max_trials, row.divisor, row.max_rungs, row.max_length, row.mode, false));
  REQUIRE(brackets.size() == row.rungs.size());
  int total = 0;
  for (std::size_t b = 0; b < brackets.size(); ++b) {
    INFO("bracket " << b);
    CHECK(static_cast<int>(brackets[b].rungs.size()) == row.rungs[b]);
    CHECK(brackets[b].trials == row.trials[b]);
    CHECK(brackets[b].rungs.back().length == row.max_length);
    total += brackets[b].trials;
  }
  CHECK(total == row.max_trials);
}

TEST_CASE("new trials are dealt to brackets interleaved, in proportion", "[searcher][adaptive_asha]") {
  auto brackets = searcher::detail::adaptive_asha_brackets(adaptive(64, 4, 5, 64, "conservative", false));
  auto bracket_of = searcher::detail::spread_trials_over_brackets(brackets);
  REQUIRE(bracket_of.size() == 64);
  std::vector<int> given(brackets.size(), 0);
  for (std::size_t prefix = 1; prefix <= bracket_of.size(); ++prefix) {
    ++given[static_cast<std::size_t>(bracket_of[prefix - 1])];
    for (std::size_t b = 0; b < brackets.size(); ++b) {
      const double fair = static_cast<double>(prefix) * brackets[b].trials / 64.0;
      INFO("after " << prefix << " trials, bracket " << b);
      CHECK(std::abs(given[b] - fair) <= 1.0);
    }
  }
  CHECK(given == std::vector<int>{43, 14, 5, 2});
}

TEST_CASE("ticket_count covers every bracket", "[searcher][adaptive_asha]") {
  // standard: brackets of 45, 14, 5 trials with 4, 3, 2 rungs; each resumes at most
  // (rungs - 1) x max(1, trials / 4): 3 x 11 + 2 x 3 + 1 x 1 = 40.
  CHECK(searcher::ticket_count(adaptive(64, 4, 5, 64, "standard", false)) == 64 + 40);
  CHECK(searcher::ticket_count(adaptive(64, 4, 5, 64, "standard", true)) == 64);
}

TEST_CASE("adaptive_asha runs", "[searcher][adaptive_asha][simulation]") {
  const bool stop_once = GENERATE(false, true);
  const std::string mode = GENERATE(as<std::string>{}, "aggressive", "standard", "conservative");
  INFO(mode << " stop_once " << stop_once);
  auto experiment = adaptive(64, 4, 5, 64, mode, stop_once);
  simulation::SimulationOptions options;
  options.workers = 6;
  options.tickets = searcher::ticket_count(experiment);
  options.curve = simulation::synthetic_curve(3, 0.1, 64);
  options.fails = [](int trial, std::int64_t length) { return trial == 9 && length == 64; };
  auto result = simulation::simulate(*searcher::make_method(experiment), options);
  CHECK(result.violations.empty());
  CHECK(result.trials.size() == 64);
  CHECK_FALSE(result.work_left);
  CHECK(result.tickets_with_work <= options.tickets);
  CHECK(result.reached(64) >= static_cast<int>(searcher::detail::adaptive_asha_brackets(experiment).size()));

  auto again = simulation::simulate(*searcher::make_method(experiment), options);
  CHECK(again.log == result.log);

  options.after_event = [&](std::size_t events, searcher::Method& current) -> std::unique_ptr<searcher::Method> {
    if (events != 100) return nullptr;
    auto fresh = searcher::make_method(experiment);
    fresh->restore(current.snapshot());
    return fresh;
  };
  auto restored = simulation::simulate(*searcher::make_method(experiment), options);
  CHECK(restored.log == result.log);
}

TEST_CASE("adaptive_asha standard run: concrete outcome", "[searcher][adaptive_asha][simulation]") {
  auto experiment = adaptive(64, 4, 5, 64, "standard", false);
  simulation::SimulationOptions options;
  options.workers = 6;
  options.tickets = searcher::ticket_count(experiment);
  options.curve = simulation::synthetic_curve(3, 0.1, 64);
  auto result = simulation::simulate(*searcher::make_method(experiment), options);
  // Brackets of 45, 14 and 5 trials with rungs (1, 4, 16, 64), (4, 16, 64), (16, 64): every
  // bracket takes its best to length 64; the first and the last two each (a result better than
  // the one promoted before it is promoted too: asynchronous promotion).
  CHECK(result.reached(4) == 34);
  CHECK(result.reached(16) == 13);
  CHECK(result.reached(64) == 5);
  CHECK(result.ended("completed") == 5);
  CHECK(result.ended("paused") == 59);
  CHECK(result.tickets_with_work == 70);
  const auto bracket_of =
      searcher::detail::spread_trials_over_brackets(searcher::detail::adaptive_asha_brackets(experiment));
  std::vector<int> completed(3, 0);
  for (const auto& [id, trial] : result.trials) {
    if (trial.end == "completed") ++completed[static_cast<std::size_t>(bracket_of[static_cast<std::size_t>(id)])];
  }
  CHECK(completed == std::vector<int>{2, 1, 2});
}
