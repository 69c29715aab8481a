// SPDX-License-Identifier: Apache-2.0
// Multi-fidelity TPE's internals (searcher/src/tpe/: tpe_weights, tpe_history, tpe_ensemble): how a
// level's agreement with the top level's results becomes its weight, which lengths become levels,
// and the weights fit_ensemble gives models that order the top results rightly or backwards.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "dlx/config/parse.hpp"
#include "tpe/tpe_ensemble.hpp"
#include "tpe/tpe_history.hpp"
#include "tpe/tpe_weights.hpp"

using namespace dlx::searcher::detail;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct AgreementRow {
  const char* what;
  std::vector<double> predicted;  // larger predicts better
  std::vector<double> observed;   // smaller is better
  std::optional<double> share;
};

}  // namespace

TEST_CASE("tpe weights: the share of strictly ordered pairs a model's scores order the same way", "[searcher][tpe]") {
  const std::vector<AgreementRow> rows{
      {"the same order", {4, 3, 2, 1}, {0.1, 0.2, 0.3, 0.4}, 1.0},
      {"reversed", {1, 2, 3, 4}, {0.1, 0.2, 0.3, 0.4}, 0.0},
      {"equal scores count half", {5, 5, 5}, {0.1, 0.2, 0.3}, 0.5},
      {"one of three pairs swapped", {3, 1, 2}, {0.1, 0.2, 0.3}, 2.0 / 3.0},
      {"tied results are no pair", {1, 2, 3}, {0.1, 0.1, 0.2}, 0.0},  // pairs (0,2) and (1,2): both wrong
      {"a diverged result ranks last", {3, 2, 1}, {0.1, 0.2, kInf}, 1.0},
      {"no strictly ordered pair", {1, 2}, {0.5, 0.5}, std::nullopt},
      {"a single result", {1}, {0.5}, std::nullopt},
  };
  for (const auto& row : rows) {
    INFO(row.what);
    const auto share = pair_agreement(row.predicted, row.observed);
    REQUIRE(share.has_value() == row.share.has_value());
    if (share) CHECK(*share == Approx(*row.share));
  }
}

TEST_CASE("tpe weights: agreeing levels share the weight, reversed or unknown ones get none", "[searcher][tpe]") {
  struct Row {
    const char* what;
    std::vector<std::optional<double>> agreements;  // shortest level first, the top level last
    std::vector<double> weights;
  };
  const std::vector<Row> rows{
      {"perfect agreement everywhere: equal weights", {1.0, 1.0, 1.0}, {1.0 / 3, 1.0 / 3, 1.0 / 3}},
      {"a reversed level gets nothing", {0.0, 1.0}, {0.0, 1.0}},
      {"chance agreement gets nothing", {0.5, 0.9}, {0.0, 1.0}},
      {"a perfect short level outweighs a noisy top", {1.0, 0.75}, {2.0 / 3, 1.0 / 3}},
      {"Kendall's tau, clipped and normalised", {0.9, 0.2, 0.7}, {0.8 / 1.2, 0.0, 0.4 / 1.2}},
      {"no level better than chance: the top level alone", {0.3, 0.5, 0.4}, {0.0, 0.0, 1.0}},
      {"no comparable pair: the top level alone", {std::nullopt, std::nullopt}, {0.0, 1.0}},
      {"a level with no comparable pair gets nothing", {std::nullopt, 0.8}, {0.0, 1.0}},
  };
  for (const auto& row : rows) {
    INFO(row.what);
    const auto weights = level_weights(row.agreements);
    REQUIRE(weights.size() == row.weights.size());
    for (std::size_t k = 0; k < weights.size(); ++k) CHECK(weights[k] == Approx(row.weights[k]));
  }
}

TEST_CASE("tpe history: a length becomes a level with startup_trials results, capped to its newest trials",
          "[searcher][tpe]") {
  TpeHistory history;
  for (int trial = 0; trial < 40; ++trial) history.record(trial, 1, 1.0 - trial * 0.01);  // 40 at length 1
  for (int trial = 0; trial < 12; ++trial) history.record(trial, 4, trial);                // 12 at length 4
  for (int trial = 0; trial < 5; ++trial) history.record(trial, 16, trial);                // 5 at length 16

  SECTION("too few results: length 16 is not used") {
    const auto levels = history.levels(10, true, 1000);
    REQUIRE(levels.size() == 2);
    CHECK(levels[0].length == 1);
    CHECK(levels[0].ranked.size() == 40);
    CHECK(levels[1].length == 4);
    CHECK(levels[1].ranked.front().trial == 0);  // best first
  }
  SECTION("with startup_trials 5 every length is a level") { CHECK(history.levels(5, true, 1000).size() == 3); }
  SECTION("the cap keeps the newest trials") {
    const auto levels = history.levels(10, true, 15);
    REQUIRE(levels[0].ranked.size() == 15);
    for (const auto& result : levels[0].ranked) CHECK(result.trial >= 25);
    CHECK(levels[0].ranked.front().trial == 39);  // the lowest metric among them
  }
  SECTION("larger is better reverses the order") {
    CHECK(history.levels(10, false, 1000)[1].ranked.front().trial == 11);
  }
  SECTION("nothing yet at startup_trials 50: no level at all") { CHECK(history.levels(50, true, 1000).empty()); }
}

TEST_CASE("tpe history: varying lengths with none reaching startup_trials use each trial's largest",
          "[searcher][tpe]") {
  TpeHistory history;
  for (int trial = 0; trial < 8; ++trial) {
    history.record(trial, 10 + trial, 1.0);     // every trial its own length
    history.record(trial, 100 + trial, trial);  // and a larger one: this is the one used
  }
  const auto levels = history.levels(6, true, 1000);
  REQUIRE(levels.size() == 1);
  CHECK(levels[0].length == 0);
  REQUIRE(levels[0].ranked.size() == 8);
  CHECK(levels[0].ranked.front().trial == 0);
  CHECK(levels[0].ranked.front().oriented == 0.0);
}

TEST_CASE("tpe ensemble: a level that orders the top results rightly gets weight, a reversed one none",
          "[searcher][tpe]") {
  // One hyperparameter x; 60 trials on a grid of x. The top level (length 64) says small x is
  // good; length 4 says the same with other numbers; length 1 says the opposite.
  const auto experiment = dlx::config::parse_experiment(
      "name: t\nentrypoint: x\nsearcher: {name: random, metric: loss, max_trials: 100, sampler: tpe}\n"
      "hyperparameters:\n  x: {type: double, minval: 0, maxval: 1}\n",
      "t.yaml");
  TpePoints points;
  TpeHistory history;
  for (int trial = 0; trial < 60; ++trial) {
    const double x = (trial * 37 % 60 + 0.5) / 60.0;  // a permutation of the grid
    points[trial] = tpe_point_in_space(experiment.hyperparameters, {{"x", x}});
    history.record(trial, 1, 1.0 - x);
    history.record(trial, 4, 2.0 + 3.0 * x);
    if (trial < 30) history.record(trial, 64, x);
  }
  const auto levels = history.levels(10, true, 1000);
  REQUIRE(levels.size() == 3);
  const auto ensemble = fit_ensemble(experiment.hyperparameters, points, levels, 0.25);
  REQUIRE(ensemble.weights.size() == 1);
  const auto& w = ensemble.weights[0];
  INFO("weights " << w[0] << " " << w[1] << " " << w[2]);
  CHECK(w[0] == 0.0);       // reversed
  CHECK(w[1] > 0.35);       // agrees, and its model saw twice the results
  CHECK(w[2] > 0.2);        // the top level's own held-out ranking
  CHECK(w[1] + w[2] == Approx(1.0));
}

TEST_CASE("tpe ensemble: each hyperparameter weighs the levels by its own agreement", "[searcher][tpe]") {
  // x is good small at every length; y is good small at length 1 but large at the top: length 1
  // helps with x and must get no weight for y.
  const auto experiment = dlx::config::parse_experiment(
      "name: t\nentrypoint: x\nsearcher: {name: random, metric: loss, max_trials: 100, sampler: tpe}\n"
      "hyperparameters:\n  x: {type: double, minval: 0, maxval: 1}\n  y: {type: double, minval: 0, maxval: 1}\n",
      "t.yaml");
  TpePoints points;
  TpeHistory history;
  for (int trial = 0; trial < 64; ++trial) {
    const double x = (trial % 8 + 0.5) / 8.0, y = (trial / 8 + 0.5) / 8.0;
    points[trial] = tpe_point_in_space(experiment.hyperparameters, {{"x", x}, {"y", y}});
    history.record(trial, 1, x + y);
    if (trial % 2 == 0) history.record(trial, 64, x + (1.0 - y));
  }
  const auto levels = history.levels(10, true, 1000);
  REQUIRE(levels.size() == 2);
  const auto ensemble = fit_ensemble(experiment.hyperparameters, points, levels, 0.25);
  REQUIRE(ensemble.weights.size() == 2);
  INFO("x: " << ensemble.weights[0][0] << " " << ensemble.weights[0][1] << "; y: " << ensemble.weights[1][0] << " "
             << ensemble.weights[1][1]);
  CHECK(ensemble.weights[0][0] > 0.3);  // length 1 orders the top results by x rightly
  CHECK(ensemble.weights[1][0] == 0.0); // and by y backwards
  CHECK(ensemble.weights[1][1] == 1.0);
}
