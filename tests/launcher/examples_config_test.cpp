// SPDX-License-Identifier: Apache-2.0
// The example experiments stay valid experiment files (what sbatch --dl-experiment would check).
#include <catch2/catch.hpp>

#include <filesystem>

#include "dlx/config/parse.hpp"

TEST_CASE("launcher: examples/grid.yaml is a valid 4-trial grid on 2 nodes", "[examples]") {
  auto e = dlx::config::parse_experiment_file(std::filesystem::path(DLX_SOURCE_DIR) /
                                              "examples" / "grid.yaml");
  CHECK(e.name == "logreg-grid");
  CHECK(e.entrypoint == std::vector<std::string>{"dlx-example-logreg"});
  CHECK_FALSE(e.entrypoint_is_shell);
  CHECK(e.searcher.name == dlx::config::SearcherName::grid);
  CHECK(e.searcher.metric == "accuracy");
  CHECK_FALSE(e.searcher.smaller_is_better);
  CHECK(e.searcher.max_trials == 4);
  CHECK(e.searcher.max_concurrent_trials == 2);
  CHECK(e.resources.nodes_per_trial == 2);
  CHECK(e.resources.tasks_per_node == 1);
  REQUIRE(e.hyperparameters.size() == 3);
  CHECK(e.hyperparameters[0].name == "learning_rate");
  CHECK(e.hyperparameters[0].type == dlx::config::HyperparameterType::log);
  CHECK(e.hyperparameters[0].count == 2);
}

TEST_CASE("launcher: examples/random.yaml is a valid 3-trial random search", "[examples]") {
  auto e = dlx::config::parse_experiment_file(std::filesystem::path(DLX_SOURCE_DIR) /
                                              "examples" / "random.yaml");
  CHECK(e.name == "logreg-random");
  CHECK(e.searcher.name == dlx::config::SearcherName::random);
  CHECK(e.searcher.max_trials == 3);
}

TEST_CASE("launcher: examples/nested.yaml groups the optimiser's settings as optim.lr and optim.l2", "[examples]") {
  auto e = dlx::config::parse_experiment_file(std::filesystem::path(DLX_SOURCE_DIR) /
                                              "examples" / "nested.yaml");
  CHECK(e.name == "logreg-nested");
  REQUIRE(e.hyperparameters.size() == 4);
  CHECK(e.hyperparameters[0].name == "optim.lr");
  CHECK(e.hyperparameters[1].name == "optim.l2");
  CHECK(e.hyperparameters[2].name == "batch_size");
}
