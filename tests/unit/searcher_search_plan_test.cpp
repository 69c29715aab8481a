// SPDX-License-Identifier: Apache-2.0
// `dlx plan`'s data (searcher::plan_search) against the searcher's own run: every method run to
// completion on the simulated cluster, with the plan's array size and throttle, must run exactly
// the trials, brackets, rung lengths and PBT rounds the plan announces.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>

#include "dlx/config/parse.hpp"
#include "dlx/searcher/method.hpp"
#include "dlx/searcher/search_plan.hpp"
#include "simulated_runner.hpp"

using namespace dlx;

namespace {

const char* kSpace =
    "  x: {type: double, minval: 0, maxval: 1, count: 3}\n"
    "  y: {type: double, minval: 0, maxval: 1, count: 2}\n";

config::Experiment parse(const std::string& searcher) {
  return config::parse_experiment("name: p\nentrypoint: x\nseed: 11\nsearcher: " + searcher + "\nhyperparameters:\n" +
                                      kSpace,
                                  "plan.yaml");
}

simulation::SimulationResult run(const config::Experiment& e, const searcher::SearchPlan& plan,
                                 std::int64_t curve_length) {
  auto method = searcher::make_method(e);
  simulation::SimulationOptions options;
  options.tickets = plan.tickets;
  options.workers = plan.throttle > 0 ? plan.throttle : plan.tickets;  // what --array's %N allows
  options.curve = simulation::synthetic_curve(e.seed, 0.05, curve_length);
  options.own_length = curve_length;
  auto result = simulation::simulate(*method, options);
  CHECK(result.violations.empty());
  CHECK_FALSE(result.work_left);  // the array was large enough
  CHECK(result.tickets_started <= plan.tickets);
  return result;
}

std::set<int> ids_of(const simulation::SimulationResult& result) {
  std::set<int> ids;
  for (const auto& [id, trial] : result.trials) ids.insert(id);
  return ids;
}

std::set<int> range(int count) {
  std::set<int> ids;
  for (int id = 0; id < count; ++id) ids.insert(id);
  return ids;
}

}  // namespace

TEST_CASE("plan = run: single, grid and random", "[searcher][plan]") {
  struct Row {
    std::string searcher;
    int trials;
    std::string array;
  };
  auto row = GENERATE(values<Row>({
      {"{name: single, metric: loss, max_length: 50}", 1, "0"},
      {"{name: grid, metric: loss, max_length: 50}", 6, "0-5"},  // 3 x 2 points
      {"{name: grid, metric: loss, max_length: 50, max_concurrent_trials: 2}", 6, "0-5%2"},
      {"{name: random, metric: loss, max_trials: 40, max_length: 50}", 40, "0-39%16"},
  }));
  auto e = parse(row.searcher);
  auto plan = searcher::plan_search(e);
  CHECK(plan.trials == row.trials);
  CHECK(plan.array == row.array);
  CHECK(plan.brackets.empty());
  CHECK(plan.rounds.empty());
  auto result = run(e, plan, 50);
  CHECK(ids_of(result) == range(plan.trials));
  CHECK(result.ended("completed") == plan.trials);
}

TEST_CASE("plan = run: ASHA brackets, their trials and rung lengths", "[searcher][plan][asha]") {
  auto searcher_section = GENERATE(as<std::string>{},
      "{name: async_halving, metric: loss, max_trials: 27, max_length: 81, num_rungs: 4, divisor: 3}",
      "{name: async_halving, metric: loss, max_trials: 20, max_length: 100, num_rungs: 3, divisor: 2.5, stop_once: true}",
      "{name: adaptive_asha, metric: loss, max_trials: 16, max_length: 937}",
      "{name: adaptive_asha, metric: loss, max_trials: 16, max_length: 937, stop_once: true}",
      "{name: adaptive_asha, metric: loss, max_trials: 40, max_length: 256, mode: conservative, max_concurrent_trials: 5}",
      "{name: adaptive_asha, metric: loss, max_trials: 30, max_length: 64, divisor: 2, bracket_rungs: [2, 5, 3]}",
      "{name: adaptive_asha, metric: loss, max_trials: 25, max_length: 1000, divisor: 2.5, mode: aggressive}");
  INFO(searcher_section);
  auto e = parse(searcher_section);
  auto plan = searcher::plan_search(e);
  auto result = run(e, plan, e.searcher.max_length->value);
  REQUIRE_FALSE(plan.brackets.empty());
  CHECK(ids_of(result) == range(plan.trials));
  int in_brackets = 0;
  for (std::size_t b = 0; b < plan.brackets.size(); ++b) {
    const auto& bracket = plan.brackets[b];
    CHECK(static_cast<int>(bracket.trial_ids.size()) == bracket.trials);
    in_brackets += bracket.trials;
    std::set<std::int64_t> lengths;
    for (const auto& rung : bracket.rungs) lengths.insert(rung.length);
    int at_top = 0;
    for (int id : bracket.trial_ids) {
      INFO("bracket " << b << ", trial " << id);
      const auto& trial = result.trials.at(id);
      REQUIRE_FALSE(trial.validations.empty());
      // Membership: the trial's first result is at its bracket's rung 0, every result at a rung of it.
      CHECK(trial.validations.front().length == bracket.rungs.front().length);
      for (const auto& validation : trial.validations) CHECK(lengths.count(validation.length) == 1);
      at_top += trial.length == bracket.rungs.back().length;
    }
    CHECK(at_top >= 1);  // every bracket sends someone to max_length
  }
  CHECK(in_brackets == plan.trials);
}

TEST_CASE("plan = run: PBT rounds, replacements and new trial ids", "[searcher][plan][pbt]") {
  auto searcher_section = GENERATE(as<std::string>{},
      "{name: pbt, metric: loss, population_size: 8, num_rounds: 4, length_per_round: 25, "
      "replace_function: {truncate_fraction: 0.25}}",
      "{name: pbt, metric: loss, population_size: 5, num_rounds: 3, length_per_round: 30}",  // n = int(1.0) = 1
      "{name: pbt, metric: loss, population_size: 4, num_rounds: 3, length_per_round: 30}");  // n = int(0.8) = 0
  INFO(searcher_section);
  auto e = parse(searcher_section);
  auto plan = searcher::plan_search(e);
  const auto& pbt = e.searcher.pbt;
  const std::int64_t per_round = pbt.length_per_round.value;
  auto result = run(e, plan, per_round * pbt.num_rounds);
  CHECK(plan.tickets == pbt.population_size * pbt.num_rounds);
  CHECK(plan.throttle == pbt.population_size);  // the default throttle: a round at a time
  CHECK(ids_of(result) == range(plan.trials));
  REQUIRE(static_cast<int>(plan.rounds.size()) == pbt.num_rounds);
  for (const auto& round : plan.rounds) {
    INFO("round " << round.round);
    const std::int64_t end = per_round * (round.round + 1);
    std::vector<int> started, reached;  // trials whose first result is at this round's end; all at it
    for (const auto& [id, trial] : result.trials) {
      if (trial.validations.front().length == end) started.push_back(id);
      for (const auto& validation : trial.validations) {
        if (validation.length == end) reached.push_back(id);
      }
    }
    CHECK(started == round.new_trials);
    CHECK(static_cast<int>(reached.size()) == pbt.population_size);
    CHECK(round.continued + static_cast<int>(round.new_trials.size()) == pbt.population_size);
    CHECK(round.first_ticket == round.round * pbt.population_size);
  }
}
