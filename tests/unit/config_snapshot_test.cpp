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
