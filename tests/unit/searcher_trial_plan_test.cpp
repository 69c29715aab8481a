#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "dlx/config/parse.hpp"
#include "dlx/searcher/trial_plan.hpp"

using namespace dlx;

namespace {

config::Experiment parse(const std::string& searcher, const std::string& hyperparameters) {
  return config::parse_experiment("name: t\nentrypoint: x\nseed: 42\nsearcher: " + searcher +
                                      "\nhyperparameters:\n" + hyperparameters,
                                  "t.yaml");
}

}  // namespace

TEST_CASE("grid: cartesian product in file order, last hyperparameter fastest", "[searcher][grid]") {
  auto experiment = parse("{name: grid, metric: m, max_concurrent_trials: 2}",
                          "  lr: {type: log, minval: -2, maxval: 0, count: 2}\n"
                          "  bs: {type: categorical, vals: [16, 64]}\n"
                          "  epochs: 5\n");
  REQUIRE(searcher::trial_count(experiment) == 4);
  CHECK(searcher::array_spec(experiment) == "0-3%2");
  auto trials = searcher::plan_all_trials(experiment);
  CHECK(trials[0].hparams["lr"] == Approx(0.01));
  CHECK(trials[0].hparams["bs"] == 16);
  CHECK(trials[1].hparams["lr"] == Approx(0.01));
  CHECK(trials[1].hparams["bs"] == 64);
  CHECK(trials[3].hparams["lr"] == Approx(1.0));
  CHECK(trials[3].hparams["epochs"] == 5);
  CHECK(trials[2].hparams.dump() == R"({"lr":1.0,"bs":16,"epochs":5})");
}

TEST_CASE("grid axes: table of types and counts", "[searcher][grid]") {
  struct Row {
    std::string hp;
    int expected_count;
  };
  auto row = GENERATE(values<Row>({
      {"{type: int, minval: 1, maxval: 3, count: 3}", 3},
      {"{type: int, minval: 1, maxval: 2, count: 5}", 2},  // deduplicated after rounding
      {"{type: double, minval: 0, maxval: 1, count: 1}", 1},
      {"{type: log, minval: -4, maxval: -1, count: 4}", 4},
      {"{type: categorical, vals: [a, b, c]}", 3},
      {"7", 1},
  }));
  INFO(row.hp);
  auto experiment = parse("{name: grid, metric: m}", "  x: " + row.hp + "\n");
  CHECK(searcher::trial_count(experiment) == row.expected_count);
}

TEST_CASE("grid larger than max_trials is an error naming both numbers", "[searcher][grid]") {
  auto experiment = parse("{name: grid, metric: m, max_trials: 3}",
                          "  x: {type: int, minval: 1, maxval: 4, count: 4}\n");
  CHECK_THROWS_WITH(searcher::trial_count(experiment),
                    Catch::Contains("searcher.max_trials: the grid has 4 points but max_trials is 3"));
}

TEST_CASE("random: deterministic per (seed, trial), inside the ranges", "[searcher][random]") {
  const std::string space =
      "  lr: {type: log, minval: -4, maxval: -1}\n"
      "  layers: {type: int, minval: 1, maxval: 3}\n"
      "  drop: {type: double, minval: 0.1, maxval: 0.5}\n"
      "  opt: {type: categorical, vals: [sgd, adam]}\n";
  auto experiment = parse("{name: random, metric: m, max_trials: 200}", space);
  CHECK(searcher::array_spec(experiment) == "0-199");
  auto trials = searcher::plan_all_trials(experiment);
  std::set<std::int64_t> layers;
  std::set<std::string> optimizers;
  for (const auto& trial : trials) {
    double lr = trial.hparams["lr"];
    CHECK(lr >= 1e-4);
    CHECK(lr <= 1e-1);
    double drop = trial.hparams["drop"];
    CHECK((drop >= 0.1 && drop < 0.5));
    layers.insert(trial.hparams["layers"].get<std::int64_t>());
    optimizers.insert(trial.hparams["opt"].get<std::string>());
  }
  CHECK(layers == std::set<std::int64_t>{1, 2, 3});
  CHECK(optimizers == std::set<std::string>{"adam", "sgd"});

  // Same seed, same trial: same values, computed alone; another seed: other values.
  CHECK(searcher::plan_trial(experiment, 17).hparams == trials[17].hparams);
  auto reseeded = experiment;
  reseeded.seed = 43;
  CHECK(searcher::plan_trial(reseeded, 17).hparams != trials[17].hparams);
  CHECK(trials[0].hparams != trials[1].hparams);
}

TEST_CASE("single: one trial of constants, and ids outside the plan are rejected", "[searcher]") {
  auto experiment = parse("{name: single, metric: m}", "  lr: 0.1\n");
  CHECK(searcher::trial_count(experiment) == 1);
  CHECK(searcher::array_spec(experiment) == "0");
  CHECK(searcher::plan_trial(experiment, 0).hparams.dump() == R"({"lr":0.1})");
  CHECK_THROWS_AS(searcher::plan_trial(experiment, 1), std::out_of_range);
}
