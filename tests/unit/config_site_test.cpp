// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "dlx/config/parse.hpp"
#include "dlx/config/site.hpp"
#include "dlx/config/snapshot.hpp"

using namespace dlx::config;

namespace {

const char* kSite = R"(defaults:
  resources: {partition: gpu, time_limit: "4:00:00", nodes_per_trial: 1}
  checkpoint: {keep_latest: 3}
  environment: {NCCL_SOCKET_IFNAME: ib0, OMP_NUM_THREADS: 1}
  max_restarts: 2
limits:
  max_trials: 10
)";

}  // namespace

TEST_CASE("site defaults fill what the experiment leaves out, the experiment wins", "[config][site]") {
  auto site = parse_site_config(kSite, "site.yaml");
  auto experiment = parse_experiment(
      "name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\n"
      "resources: {partition: debug}\nenvironment: {OMP_NUM_THREADS: 8}\n",
      "exp.yaml", &site);
  CHECK(experiment.resources.partition == "debug");
  CHECK(experiment.resources.time_limit == "4:00:00");
  CHECK(experiment.checkpoint.keep_latest == 3);
  CHECK(experiment.max_restarts == 2);
  REQUIRE(experiment.environment.size() == 2);
  CHECK(experiment.environment[0].second == "ib0");
  CHECK(experiment.environment[1].second == "8");

  // The merged values are frozen: the snapshot alone reproduces the run, without the site file.
  auto frozen = parse_experiment(to_yaml(experiment), "experiment.yaml");
  CHECK(frozen.resources.time_limit == "4:00:00");
  CHECK(frozen.environment == experiment.environment);
  CHECK(frozen.max_restarts == 2);
}

TEST_CASE("the site's trial cap is enforced with a message naming both files", "[config][site]") {
  auto site = parse_site_config(kSite, "/etc/dlx/site.yaml");
  CHECK_THROWS_WITH(parse_experiment("name: a\nentrypoint: x\nsearcher: {name: random, metric: m, max_trials: 11}\n",
                                     "exp.yaml", &site),
                    Catch::Contains("exp.yaml:3:49: searcher.max_trials: is 11, above this site's limit of 10 "
                                    "(set in /etc/dlx/site.yaml)"));
}

TEST_CASE("mistakes in the site file name the site file", "[config][site]") {
  CHECK_THROWS_WITH(parse_site_config("defaults:\n  resources: {partitoin: gpu}\n", "site.yaml"),
                    Catch::Contains("site.yaml:2:15: defaults.resources.partitoin: unknown key in defaults.resources (did you mean 'partition'?)"));
  CHECK_THROWS_WITH(parse_site_config("limits: {max_trials: 0}\n", "site.yaml"),
                    Catch::Contains("site.yaml:1:22: limits.max_trials: must be between 1 and 1000000, got 0"));
  CHECK_THROWS_WITH(parse_site_config("default: {}\n", "site.yaml"), Catch::Contains("did you mean 'defaults'?"));
}
