// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <cmath>
#include <iterator>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "dlx/common/crc32c.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/config/snapshot.hpp"
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
  CHECK(searcher::array_spec(experiment) == "0-199%16");  // Determined's default max_concurrent_trials
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

TEST_CASE("random: the same points as ever, for 5 hyperparameters and for 20,000", "[searcher][random]") {
  // Pinned values, from the implementation before random points became linear in the number of
  // hyperparameters (each was an ordered_json operator[] assignment, a search of the members so
  // far): a trial's point must never change with how it is computed (DESIGN: determinism).
  auto base = parse("{name: random, metric: m, max_trials: 10}",
                    "  lr: {type: log, minval: -4, maxval: -1}\n"
                    "  layers: {type: int, minval: 1, maxval: 3}\n"
                    "  drop: {type: double, minval: 0.1, maxval: 0.5}\n"
                    "  opt: {type: categorical, vals: [sgd, adam]}\n"
                    "  epochs: 5\n");
  CHECK(searcher::plan_trial(base, 3).hparams.dump() ==
        R"({"lr":0.003212950973812407,"layers":1,"drop":0.4455241458658137,"opt":"adam","epochs":5})");
  // 4,000 copies of those five, renamed lr0, layers0, ... (the parser's 1 MiB limit keeps a file
  // of them out of reach): this took 0.3 s a point before, quadratic; a hang here is the regression.
  auto wide = base;
  wide.hyperparameters.clear();
  for (int i = 0; i < 4000; ++i) {
    for (auto hp : base.hyperparameters) {
      hp.name += std::to_string(i);
      wide.hyperparameters.push_back(std::move(hp));
    }
  }
  for (const auto& [trial, crc, bytes] : {std::tuple{0, 0xc7ec1cf6U, 424000U}, std::tuple{7, 0xa39022bcU, 424002U}}) {
    INFO("trial " << trial);
    const auto point = searcher::plan_trial(wide, trial).hparams;
    REQUIRE(point.size() == 20000);
    CHECK(point.begin().key() == "lr0");  // file order
    CHECK(std::prev(point.end()).key() == "epochs3999");
    const std::string text = point.dump();
    CHECK(text.size() == bytes);
    CHECK(dlx::crc32c(text) == crc);
  }
  // A name given twice (the searcher does not count on the parser to refuse it): its first place, and
  // the value of its last slot, as an assignment in file order gives.
  auto twice = base;
  twice.hyperparameters.push_back(base.hyperparameters.front());
  CHECK(searcher::plan_trial(twice, 3).hparams.dump() ==
        R"({"lr":0.00039214168523230974,"layers":1,"drop":0.4455241458658137,"opt":"adam","epochs":5})");
}

TEST_CASE("single: one trial of constants, and ids outside the plan are rejected", "[searcher]") {
  auto experiment = parse("{name: single, metric: m}", "  lr: 0.1\n");
  CHECK(searcher::trial_count(experiment) == 1);
  CHECK(searcher::array_spec(experiment) == "0");
  CHECK(searcher::plan_trial(experiment, 0).hparams.dump() == R"({"lr":0.1})");
  CHECK_THROWS_AS(searcher::plan_trial(experiment, 1), std::out_of_range);
}

namespace {

// The grid axis as first defined (every point materialised, consecutive equal rounded integers
// kept once): the reference the direct computation must match value for value.
std::vector<nlohmann::json> reference_axis(const config::Hyperparameter& hp) {
  const int count = hp.count.value_or(1);
  auto point = [&](int k) { return count == 1 ? hp.minval : hp.minval + (hp.maxval - hp.minval) * k / (count - 1); };
  std::vector<nlohmann::json> axis;
  for (int k = 0; k < count; ++k) {
    switch (hp.type) {
      case config::HyperparameterType::integer: {
        auto value = static_cast<std::int64_t>(std::llround(point(k)));
        if (axis.empty() || axis.back().get<std::int64_t>() != value) axis.push_back(value);
        break;
      }
      case config::HyperparameterType::real: axis.push_back(point(k)); break;
      case config::HyperparameterType::log: axis.push_back(std::pow(hp.base, point(k))); break;
      default: break;
    }
  }
  return axis;
}

config::Experiment one_axis_grid(const std::string& hp) {
  return parse("{name: grid, metric: m, max_trials: 1000000}", "  x: " + hp + "\n");
}

}  // namespace

TEST_CASE("grid: integer axes with duplicates keep their pinned points", "[searcher][grid]") {
  struct Row {
    std::string hp;
    std::vector<std::int64_t> values;
  };
  auto row = GENERATE(values<Row>({
      // 1, 1.5, 2, 2.5, 3, 3.5, 4 round (half away from zero) to 1, 2, 2, 3, 3, 4, 4
      {"{type: int, minval: 1, maxval: 4, count: 7}", {1, 2, 3, 4}},
      // -2 .. 2 in halves: -0.5 rounds to -1 and 0.5 to 1, 0 is the middle point
      {"{type: int, minval: -2, maxval: 2, count: 9}", {-2, -1, 0, 1, 2}},
      {"{type: int, minval: 0, maxval: 10, count: 4}", {0, 3, 7, 10}},
      {"{type: int, minval: 5, maxval: 5, count: 1000}", {5}},
      {"{type: int, minval: 0, maxval: 2, count: 1000000}", {0, 1, 2}},
      // count 1: the midpoint, as in Determined's grid.go: round((-3 + 7) / 2.0) = 2
      {"{type: int, minval: -3, maxval: 7, count: 1}", {2}},
  }));
  INFO(row.hp);
  const auto experiment = one_axis_grid(row.hp);
  REQUIRE(searcher::trial_count(experiment) == static_cast<int>(row.values.size()));
  const auto trials = searcher::plan_all_trials(experiment);
  for (std::size_t i = 0; i < row.values.size(); ++i) {
    CHECK(trials[i].hparams["x"].get<std::int64_t>() == row.values[i]);
    CHECK(searcher::plan_trial(experiment, static_cast<int>(i)).hparams == trials[i].hparams);
  }
}

TEST_CASE("grid: every axis equals the materialised definition, exact or not", "[searcher][grid]") {
  // Bounds small enough for the arithmetic form and large enough for the searched one (doubles
  // far from exact: 2^40 x 5000 points, INT64_MAX, whose double 2^63 llround cannot represent).
  const std::vector<std::string> spaces{
      "{type: int, minval: 0, maxval: 999, count: 1000}",
      "{type: int, minval: 0, maxval: 1000, count: 999}",
      "{type: int, minval: -1000, maxval: 1000, count: 4000}",
      "{type: int, minval: -7, maxval: 3, count: 29}",
      "{type: int, minval: 3, maxval: 1000003, count: 77777}",
      "{type: int, minval: -536870912, maxval: 536870912, count: 1000}",
      "{type: int, minval: 0, maxval: 1099511627776, count: 5000}",
      "{type: int, minval: 1099511627776, maxval: 1099511627800, count: 5000}",
      "{type: int, minval: -9223372036854775807, maxval: 9223372036854775807, count: 3}",
      "{type: int, minval: 0, maxval: 9223372036854775807, count: 50}",
      "{type: int, minval: 9223372036854774000, maxval: 9223372036854775807, count: 20}",
      "{type: double, minval: -1, maxval: 1, count: 1001}",
      "{type: log, minval: -6, maxval: 2, base: 2, count: 333}",
  };
  for (const auto& space : spaces) {
    INFO(space);
    const auto experiment = one_axis_grid(space);
    const auto reference = reference_axis(experiment.hyperparameters[0]);
    REQUIRE(searcher::trial_count(experiment) == static_cast<int>(reference.size()));
    const auto trials = searcher::plan_all_trials(experiment);
    for (std::size_t i = 0; i < reference.size(); ++i) {
      if (trials[i].hparams["x"] != reference[i]) FAIL("point " << i << ": " << trials[i].hparams["x"] << " != " << reference[i]);
    }
  }
}

TEST_CASE("grid: a trial of a million-point grid of 1,000 hyperparameters is planned alone", "[searcher][grid]") {
  // Every axis used to be rebuilt for every point: this took hours. The plan of one trial now
  // touches each hyperparameter once (a hang here is the regression).
  std::string space = "  x: {type: double, minval: 0, maxval: 1, count: 1000000}\n";
  for (int i = 0; i < 1000; ++i) space += fmt::format("  c{}: {{type: int, minval: 4, maxval: 4, count: 1000000}}\n", i);
  const auto experiment = parse("{name: grid, metric: m, max_trials: 1000000}", space);
  REQUIRE(searcher::trial_count(experiment) == 1'000'000);
  const auto last = searcher::plan_trial(experiment, 999'999).hparams;
  CHECK(last["x"] == 1.0);
  CHECK(last["c999"] == 4);
  CHECK(last.size() == 1001);
  CHECK(last.begin().key() == "x");  // file order
}

TEST_CASE("hostile hyperparameter values reach the plan verbatim: DLX_HPARAMS carries them as data",
          "[searcher][grid]") {
  // What the plugin exports (DLX_HPARAMS is the plan's JSON, DLX_HP_<NAME> the value's text): no
  // shell ever sees them, so $(), backticks and newlines are characters, not commands or lines.
  const auto experiment = parse("{name: grid, metric: m}",
                                "  cmd: {type: categorical, vals: [\"$(touch /tmp/dlx-owned)\", \"`id`\", "
                                "\"a\\nb\", \"\\e]0;title\\a\", \"x; rm -rf ~\"]}\n"
                                "  quoted: \"'\\\"$HOME\\\"'\"\n");
  const std::vector<std::string> expected{"$(touch /tmp/dlx-owned)", "`id`", "a\nb", "\x1b]0;title\x07",
                                          "x; rm -rf ~"};
  const auto trials = searcher::plan_all_trials(experiment);
  REQUIRE(trials.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CHECK(trials[i].hparams["cmd"].get<std::string>() == expected[i]);
    CHECK(trials[i].hparams["quoted"].get<std::string>() == "'\"$HOME\"'");
    // The JSON text round-trips to the same strings (newlines and controls escaped inside it).
    const std::string text = trials[i].hparams.dump();
    CHECK(text.find('\n') == std::string::npos);
    CHECK(nlohmann::ordered_json::parse(text) == trials[i].hparams);
  }
}

TEST_CASE("max_array_tasks: more tickets than tasks run in turn, each ticket in exactly one task",
          "[searcher][array]") {
  auto experiment = parse("{name: random, metric: m, max_trials: 10, max_concurrent_trials: 3}",
                          "  lr: {type: double, minval: 0, maxval: 1}\n");
  CHECK(searcher::array_task_count(experiment) == 10);  // unset: one task per ticket
  CHECK(searcher::tickets_of_task(experiment, 7) == std::vector<int>{7});
  experiment.resources.max_array_tasks = 4;
  CHECK(searcher::array_task_count(experiment) == 4);
  CHECK(searcher::array_spec(experiment) == "0-3%3");
  CHECK(searcher::tickets_of_task(experiment, 0) == std::vector<int>{0, 4, 8});
  CHECK(searcher::tickets_of_task(experiment, 1) == std::vector<int>{1, 5, 9});
  CHECK(searcher::tickets_of_task(experiment, 3) == std::vector<int>{3, 7});
  CHECK(searcher::tickets_of_task(experiment, 4).empty());
  CHECK(searcher::tickets_of_task(experiment, -1).empty());
  std::multiset<int> every;
  for (int task = 0; task < 4; ++task) {
    for (const int ticket : searcher::tickets_of_task(experiment, task)) {
      every.insert(ticket);
      CHECK(searcher::task_of_ticket(experiment, ticket) == task);
    }
  }
  CHECK(every == std::multiset<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  experiment.resources.max_array_tasks = 2;  // the throttle no longer limits two tasks
  CHECK(searcher::array_spec(experiment) == "0-1");
  experiment.resources.max_array_tasks = 50;  // above the ticket count: one task per ticket
  CHECK(searcher::array_task_count(experiment) == 10);
  CHECK(searcher::array_spec(experiment) == "0-9%3");
}

TEST_CASE("fit_array_to_cluster: caps the array at MaxArraySize as sbatch does, and only then", "[searcher][array]") {
  auto experiment = parse("{name: random, metric: m, max_trials: 5000}", "  lr: {type: double, minval: 0, maxval: 1}\n");
  CHECK_FALSE(searcher::fit_array_to_cluster(experiment, 5000));  // fits exactly
  CHECK_FALSE(experiment.resources.max_array_tasks.has_value());
  CHECK_FALSE(searcher::fit_array_to_cluster(experiment, 0));  // arrays disabled: sbatch's own refusal
  CHECK(searcher::fit_array_to_cluster(experiment, 1001));
  CHECK(experiment.resources.max_array_tasks == 1001);
  CHECK(searcher::array_spec(experiment) == "0-1000%16");
  CHECK(searcher::tickets_of_task(experiment, 1000) == std::vector<int>{1000, 2001, 3002, 4003});
  // A user's own cap below the cluster's stays.
  experiment.resources.max_array_tasks = 300;
  CHECK_FALSE(searcher::fit_array_to_cluster(experiment, 1001));
  CHECK(experiment.resources.max_array_tasks == 300);
  // ... and one above it is lowered to it.
  experiment.resources.max_array_tasks = 2000;
  CHECK(searcher::fit_array_to_cluster(experiment, 1001));
  CHECK(experiment.resources.max_array_tasks == 1001);
}

TEST_CASE("max_array_tasks: read from resources, frozen into the snapshot, refused when not positive",
          "[searcher][array]") {
  const auto experiment = config::parse_experiment(
      "name: t\nentrypoint: x\nsearcher: {name: random, metric: m, max_trials: 5000}\n"
      "hyperparameters: {lr: {type: double, minval: 0, maxval: 1}}\nresources: {max_array_tasks: 1000}\n",
      "t.yaml");
  REQUIRE(experiment.resources.max_array_tasks == 1000);
  CHECK(searcher::array_task_count(experiment) == 1000);
  CHECK(searcher::tickets_of_task(experiment, 999) == std::vector<int>{999, 1999, 2999, 3999, 4999});
  const auto frozen = config::parse_experiment(config::to_yaml(experiment), "experiment.yaml");
  CHECK(frozen.resources.max_array_tasks == 1000);
  try {
    config::parse_experiment("name: t\nentrypoint: x\nsearcher: {name: single, metric: m}\n"
                             "hyperparameters: {}\nresources: {max_array_tasks: 0}\n",
                             "t.yaml");
    FAIL("max_array_tasks: 0 must be refused");
  } catch (const config::ConfigError& error) {
    CHECK_THAT(error.what(), Catch::Contains("max_array_tasks") && Catch::Contains("several trials in turn"));
  }
}

namespace {

// An experiment of `trials` random trials with `resources`, parsed as sbatch parses it.
config::Experiment packed(int trials, const std::string& resources, const std::string& more = "") {
  return config::parse_experiment(fmt::format("name: t\nentrypoint: x\nseed: 3\nsearcher: {{name: random, metric: m, "
                                              "max_trials: {}{}}}\nhyperparameters: {{lr: {{type: double, minval: 0, "
                                              "maxval: 1}}}}\nresources: {}\n",
                                              trials, more, resources),
                                  "t.yaml");
}

// The message of the ConfigError that parsing `resources` throws ("" when it parses).
std::string packing_error(const std::string& resources) {
  try {
    packed(8, resources);
  } catch (const config::ConfigError& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("packing: trials_per_gpu and trials_per_task make fewer tasks, each running several at once",
          "[searcher][array][packing]") {
  auto experiment = packed(8, "{gpus_per_node: 1, trials_per_gpu: 4}");
  CHECK(config::packed_trials(experiment.resources) == 4);
  CHECK(searcher::array_task_count(experiment) == 2);
  CHECK(searcher::tickets_of_task(experiment, 0) == std::vector<int>{0, 2, 4, 6});
  CHECK(searcher::tickets_of_task(experiment, 1) == std::vector<int>{1, 3, 5, 7});
  CHECK(searcher::task_load_text(experiment) == "up to 4 at once");
  CHECK(searcher::array_tasks_cause(experiment) == "resources.trials_per_gpu");
  CHECK(searcher::array_spec(experiment) == "0-1");
  // gpus_per_trial: 1/N is the same; two GPUs a task hold twice the trials.
  CHECK(config::packed_trials(packed(8, "{gpus_per_node: 2, gpus_per_trial: 0.25}").resources) == 8);
  CHECK(config::packed_trials(packed(8, "{gpus_per_node: 1, gpus_per_trial: 0.3333333333}").resources) == 3);
  CHECK(config::packed_trials(packed(8, "{gpus_per_node: 1, gpus_per_trial: 1/4}").resources) == 4);
  // CPU trials: trials_per_task.
  experiment = packed(10, "{trials_per_task: 4}");
  CHECK(searcher::array_task_count(experiment) == 3);
  CHECK(searcher::tickets_of_task(experiment, 2) == std::vector<int>{2, 5, 8});
  CHECK(searcher::array_tasks_cause(experiment) == "resources.trials_per_task");
  // The throttle counts tasks: 8 trials at once are 2 tasks of 4.
  experiment = packed(40, "{trials_per_task: 4}", ", max_concurrent_trials: 8");
  CHECK(searcher::array_task_count(experiment) == 10);
  CHECK(searcher::array_spec(experiment) == "0-9%2");
  // With max_array_tasks too: each task runs more than it holds at once.
  experiment = packed(40, "{trials_per_task: 4, max_array_tasks: 5}");
  CHECK(searcher::array_task_count(experiment) == 5);
  CHECK(searcher::task_load_text(experiment) == "up to 8, 4 at once");
  CHECK(searcher::array_tasks_cause(experiment) == "resources.max_array_tasks");
  // Frozen into the snapshot as given.
  const auto frozen = config::parse_experiment(config::to_yaml(packed(8, "{gpus_per_node: 1, gpus_per_trial: 0.5}")),
                                               "experiment.yaml");
  CHECK(frozen.resources.trials_per_gpu == 2);
  CHECK(config::packed_trials(frozen.resources) == 2);
}

TEST_CASE("packing: refused with a message where it cannot work", "[searcher][array][packing]") {
  CHECK_THAT(packing_error("{trials_per_gpu: 4}"),
             Catch::Contains("resources.trials_per_gpu: shares GPUs among trials, but the trial asks for none "
                             "(resources.gpus_per_node)") &&
                 Catch::Contains("pack CPU trials with trials_per_task"));
  CHECK_THAT(packing_error("{gpus_per_node: 1, gpus_per_trial: 0.3}"),
             Catch::Contains("resources.gpus_per_trial: must be 1/N of a GPU for N from 1 to 64 (1/4, or 1, 0.5, "
                             "0.25, 0.125, ...), got 0.3"));
  CHECK_THAT(packing_error("{gpus_per_node: 1, gpus_per_trial: 1/0}"), Catch::Contains("must be 1/N of a GPU"));
  CHECK_THAT(packing_error("{gpus_per_node: 1, gpus_per_trial: 1/x}"), Catch::Contains("got 1/x"));
  CHECK_THAT(packing_error("{gpus_per_node: 1, gpus_per_trial: 2}"), Catch::Contains("must be 1/N of a GPU"));
  CHECK_THAT(packing_error("{gpus_per_node: 1, gpus_per_trial: 0}"), Catch::Contains("must be 1/N of a GPU"));
  CHECK_THAT(packing_error("{gpus_per_node: 1, trials_per_gpu: 2, gpus_per_trial: 0.5}"),
             Catch::Contains("resources.gpus_per_trial: says again what trials_per_gpu says"));
  CHECK_THAT(packing_error("{gpus_per_node: 2, trials_per_gpu: 2, trials_per_task: 3}"),
             Catch::Contains("resources.trials_per_task: is 3, but 2 trials per GPU on 2 GPUs make 4"));
  CHECK_THAT(packing_error("{nodes_per_trial: 2, trials_per_task: 4}"),
             Catch::Contains("resources.trials_per_task: packs trials of one process each, but a trial has 2 nodes "
                             "x 1 rank") &&
                 Catch::Contains("nodes_per_trial: 1, tasks_per_node: 1"));
  CHECK_THAT(packing_error("{trials_per_task: 0}"), Catch::Contains("trials_per_task"));
  CHECK_THAT(packing_error("{gpus_per_node: 8, trials_per_gpu: 64}"),
             Catch::Contains("resources.trials_per_gpu: packs 64 trials per GPU on 8 GPUs, 512 in one array task: "
                             "at most 256"));
  CHECK(packing_error("{trials_per_task: 1}").empty());
  CHECK(packing_error("{gpus_per_node: 2, trials_per_gpu: 2, trials_per_task: 4}").empty());
}

TEST_CASE("packing through Slurm's shards: one trial per array task, each asking for its share of a GPU",
          "[searcher][array][packing]") {
  // The cluster's gres/shard count per GPU (usually the site file's defaults.resources).
  auto experiment = packed(8, "{gpus_per_node: 1, trials_per_gpu: 2, shards_per_gpu: 4}");
  CHECK(config::shares_gpus_by_shards(experiment.resources));
  CHECK(config::shards_per_trial(experiment.resources) == 2);
  CHECK(config::packed_trials(experiment.resources) == 1);
  CHECK(searcher::array_task_count(experiment) == 8);
  CHECK(searcher::array_spec(experiment) == "0-7");
  CHECK(searcher::shard_sharing_text(experiment) ==
        "each trial asks for 2 of a GPU's 4 shards (--gres=shard:2, resources.shards_per_gpu): Slurm places up to 2 "
        "trials on one GPU, each with its own array task");
  // gpus_per_trial: 1/4 on 8 shards: 2 each. Frozen into the snapshot as given.
  experiment = packed(8, "{gpus_per_node: 1, gpus_per_trial: 1/4, shards_per_gpu: 8}");
  CHECK(config::shards_per_trial(experiment.resources) == 2);
  const auto frozen = config::parse_experiment(config::to_yaml(experiment), "experiment.yaml");
  CHECK(frozen.resources.shards_per_gpu == 8);
  CHECK(config::shards_per_trial(frozen.resources) == 2);
  // Without trials_per_gpu the shards change nothing; with trials_per_task the task packs them.
  CHECK(searcher::shard_sharing_text(packed(8, "{gpus_per_node: 1, shards_per_gpu: 4}")).empty());
  CHECK(config::packed_trials(packed(8, "{gpus_per_node: 1, trials_per_gpu: 2, trials_per_task: 2, "
                                        "shards_per_gpu: 4}").resources) == 2);
}

TEST_CASE("packing through shards: refused with a message where Slurm could not do it", "[searcher][array][packing]") {
  CHECK_THAT(packing_error("{gpus_per_node: 1, trials_per_gpu: 3, shards_per_gpu: 4}"),
             Catch::Contains("resources.trials_per_gpu: shares each GPU among 3 trials, which does not divide its 4 "
                             "shards (resources.shards_per_gpu, the cluster's gres/shard per GPU)") &&
                 Catch::Contains("use a divisor of 4: 1, 2, 4"));
  CHECK_THAT(packing_error("{gpus_per_node: 1, trials_per_gpu: 8, shards_per_gpu: 4}"),
             Catch::Contains("shares each GPU among 8 trials, which does not divide its 4 shards"));
  CHECK_THAT(packing_error("{gpus_per_node: 2, trials_per_gpu: 2, shards_per_gpu: 4}"),
             Catch::Contains("resources.gpus_per_node: is 2, but with shards (resources.shards_per_gpu) a trial takes "
                             "its share of one GPU") &&
                 Catch::Contains("set gpus_per_node: 1"));
  CHECK_THAT(packing_error("{gpus_per_node: 1, tasks_per_node: 2, trials_per_gpu: 2, shards_per_gpu: 4}"),
             Catch::Contains("resources.trials_per_gpu: shares a GPU among trials of one process each, but a trial "
                             "has 1 node x 2 ranks"));
  CHECK_THAT(packing_error("{gpus_per_node: 1, trials_per_gpu: 2, shards_per_gpu: 0}"),
             Catch::Contains("resources.shards_per_gpu") && Catch::Contains("gres/shard count of each GPU"));
  CHECK_THAT(packing_error("{trials_per_gpu: 2, shards_per_gpu: 4}"),
             Catch::Contains("shares GPUs among trials, but the trial asks for none"));
}
