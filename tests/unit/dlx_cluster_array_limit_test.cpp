// SPDX-License-Identifier: Apache-2.0
// The MaxArraySize `dlx validate` and `dlx plan` apply (tools/dlx/cluster_array_limit.hpp): read
// from `scontrol show config`'s report, and --max-array-size over asking Slurm. The answer of a
// real slurmctld is checked by cluster.array_tasks.
#include <catch2/catch.hpp>

#include "cluster_array_limit.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/searcher/trial_plan.hpp"

using dlx::cli::ClusterArrayLimit;
using dlx::cli::max_array_size_of;

TEST_CASE("max_array_size_of: MaxArraySize from scontrol's report, nothing from anything else", "[cli][array]") {
  // Trimmed from `scontrol show config` on `dlx cluster up` (Slurm 22.05.8).
  const char* report = "Configuration data as of 2026-11-29T23:50:00\n"
                       "KillWait                = 5 sec\n"
                       "MaxArraySize            = 1001\n"
                       "MaxJobCount             = 10000\n";
  CHECK(max_array_size_of(report) == 1001u);
  CHECK(max_array_size_of("MaxArraySize            = 0\n") == 0u);
  CHECK_FALSE(max_array_size_of("").has_value());
  CHECK_FALSE(max_array_size_of("MaxJobCount             = 10000\n").has_value());
  CHECK_FALSE(max_array_size_of("MaxArraySize            = lots\n").has_value());
  CHECK_FALSE(max_array_size_of("MaxArraySize            = 1001 tasks\n").has_value());
  CHECK_FALSE(max_array_size_of("MaxArraySize            = -1\n").has_value());
}

TEST_CASE("ClusterArrayLimit: --max-array-size wins over Slurm, 0 applies no limit", "[cli][array]") {
  auto experiment = dlx::config::parse_experiment(
      "name: t\nentrypoint: x\nsearcher: {name: random, metric: m, max_trials: 50}\n"
      "hyperparameters: {lr: {type: double, minval: 0, maxval: 1}}\n",
      "t.yaml");
  auto copy = experiment;
  ClusterArrayLimit none(0);
  CHECK(none.given());
  CHECK_FALSE(none.max_array_size().has_value());
  CHECK_FALSE(none.fit(copy));
  CHECK(dlx::searcher::array_task_count(copy) == 50);
  ClusterArrayLimit twenty(20);
  CHECK(twenty.max_array_size() == 20u);
  CHECK(std::string(twenty.source()) == "--max-array-size");
  CHECK(twenty.fit(experiment));
  CHECK(dlx::searcher::array_task_count(experiment) == 20);
  CHECK_FALSE(twenty.fit(experiment));  // already fits
}
