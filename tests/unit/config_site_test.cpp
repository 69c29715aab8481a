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

TEST_CASE("CUDA MPS: asked for by packed GPU trials, granted only by the site file", "[config][site]") {
  const std::string packed =
      "name: a\nentrypoint: x\nsearcher: {name: random, metric: m, max_trials: 8}\n"
      "resources: {gpus_per_node: 1, trials_per_gpu: 4, mps: true}\n";
  auto experiment = parse_experiment(packed, "exp.yaml");
  CHECK(experiment.resources.mps);
  CHECK(parse_experiment(to_yaml(experiment), "experiment.yaml").resources.mps);  // frozen
  CHECK_FALSE(parse_experiment("name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\n", "e.yaml").resources.mps);

  // The site decides: no site file, or one without limits: {mps: true}, refuses it.
  CHECK_THROWS_WITH(check_site_allows(experiment, nullptr),
                    "exp.yaml: resources.mps: asks for CUDA MPS, which this cluster does not allow (its dlx plugin "
                    "has no site file with limits: {mps: true}) (remove resources.mps (packed trials then share "
                    "the GPU in turns), or ask your administrator to allow MPS (docs/admin-guide.md, \"Sharing "
                    "GPUs\"))");
  const auto strict = parse_site_config(kSite, "/etc/dlx/site.yaml");
  CHECK_FALSE(strict.allow_mps);
  CHECK_THROWS_WITH(check_site_allows(experiment, &strict),
                    Catch::Contains("resources.mps: asks for CUDA MPS, which this site does not allow (its file "
                                    "/etc/dlx/site.yaml has no limits: {mps: true})"));
  const auto allowing = parse_site_config("limits: {mps: true}\n", "site.yaml");
  CHECK(allowing.allow_mps);
  CHECK_NOTHROW(check_site_allows(experiment, &allowing));
  CHECK_NOTHROW(check_site_allows(parse_experiment("name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\n",
                                                   "e.yaml"), nullptr));
  CHECK_THROWS_WITH(parse_site_config("limits: {mps: yes please}\n", "site.yaml"),
                    Catch::Contains("site.yaml:1:15: limits.mps:"));

  // Only for trials packed on GPUs the task holds whole.
  CHECK_THROWS_WITH(parse_experiment("name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\n"
                                     "resources: {gpus_per_node: 1, mps: true}\n", "exp.yaml"),
                    "exp.yaml:4:36: resources.mps: asks for CUDA MPS, which serves trials packed on one GPU, but no "
                    "GPU is shared (resources.trials_per_gpu is not 2 or more) (use mps with trials_per_gpu: N (2 or "
                    "more) in one task, without shards_per_gpu; or remove mps)");
  CHECK_THROWS_WITH(parse_experiment("name: a\nentrypoint: x\nsearcher: {name: random, metric: m, max_trials: 8}\n"
                                     "resources: {gpus_per_node: 1, trials_per_gpu: 4, shards_per_gpu: 8, mps: true}\n",
                                     "exp.yaml"),
                    Catch::Contains("resources.mps: asks for CUDA MPS, but the trials share GPUs as Slurm's shards"));
}
