// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "dlx/config/parse.hpp"
#include "dlx/config/snapshot.hpp"

using namespace dlx::config;

TEST_CASE("a snapshot parses back to the same experiment", "[config][snapshot]") {
  const char* text = R"(name: snap
entrypoint: [python3, "train.py"]
seed: 123456789012
hyperparameters:
  lr: {type: log, minval: -3.5, maxval: -1, base: 2, count: 3}
  layers: {type: int, minval: 1, maxval: 4}
  kind: {type: categorical, vals: [a, "5", 5, true]}
  tag: "007"
  optim:
    momentum: {type: double, minval: 0.1, maxval: 0.9}
searcher: {name: random, metric: loss, max_trials: 9, max_concurrent_trials: 3}
resources: {nodes_per_trial: 2, tasks_per_node: 4}
)";
  auto original = parse_experiment(text, "in.yaml");
  auto yaml = to_yaml(original);
  auto again = parse_experiment(yaml, "experiment.yaml");
  CHECK(to_yaml(again) == yaml);
  CHECK(again.seed == 123456789012ULL);
  CHECK_FALSE(again.entrypoint_is_shell);
  REQUIRE(again.hyperparameters.size() == original.hyperparameters.size());
  for (std::size_t i = 0; i < again.hyperparameters.size(); ++i) {
    const auto& a = original.hyperparameters[i];
    const auto& b = again.hyperparameters[i];
    INFO(a.name);
    CHECK(a.name == b.name);
    CHECK(a.type == b.type);
    CHECK(a.value == b.value);
    CHECK(a.minval == b.minval);
    CHECK(a.maxval == b.maxval);
    CHECK(a.base == b.base);
    CHECK(a.count == b.count);
    CHECK(a.vals == b.vals);
  }
  CHECK(again.hyperparameters[3].value.is_string());
  CHECK(again.searcher.max_trials == 9);
  CHECK(again.searcher.max_concurrent_trials == 3);
  CHECK(again.resources.tasks_per_node == 4);
}

TEST_CASE("the sampler and its TPE settings survive the snapshot", "[config][snapshot][sampler]") {
  auto tpe = parse_experiment(
      "name: s\nentrypoint: x\nseed: 1\nsearcher: {name: async_halving, metric: loss, max_trials: 50, "
      "max_length: {batches: 900}, sampler: tpe, tpe: {startup_trials: 12, gamma: 0.15, candidates: 48}}\n",
      "in.yaml");
  auto yaml = to_yaml(tpe);
  auto again = parse_experiment(yaml, "experiment.yaml");
  CHECK(to_yaml(again) == yaml);
  CHECK(again.searcher.sampler == SamplerName::tpe);
  CHECK(again.searcher.tpe.startup_trials == 12);
  CHECK(again.searcher.tpe.gamma == 0.15);
  CHECK(again.searcher.tpe.candidates == 48);

  // The default is frozen explicitly where a sampler applies, and left out where it would be an error.
  auto random = to_yaml(parse_experiment("name: s\nentrypoint: x\nsearcher: {name: random, metric: m, max_trials: 3}\n", "r.yaml"));
  CHECK_THAT(random, Catch::Contains("sampler: random"));
  CHECK_THAT(random, !Catch::Contains("tpe"));
  CHECK(parse_experiment(random, "experiment.yaml").searcher.sampler == SamplerName::random);
  auto grid = to_yaml(parse_experiment("name: s\nentrypoint: x\nsearcher: {name: grid, metric: m}\n", "g.yaml"));
  CHECK_THAT(grid, !Catch::Contains("sampler"));
  CHECK_NOTHROW(parse_experiment(grid, "experiment.yaml"));
}
