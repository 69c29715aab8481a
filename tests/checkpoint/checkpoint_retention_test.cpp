// SPDX-License-Identifier: Apache-2.0
// Retention: keep_latest, keep_best by the searcher metric, keep_experiment_best across trials,
// the newest valid checkpoint and searcher-referenced steps are never deleted; invalid files stay.
#include <catch2/catch.hpp>

#include "checkpoint_samples.hpp"
#include "dlx/checkpoint/retention.hpp"
#include "dlx/store/experiment_layout.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using dlx::checkpoint::testing::ScratchDir;

namespace {

void save_step(const std::filesystem::path& dir, std::int64_t trial, std::int64_t step,
               double loss) {
  testing::SampleContent sample(step, 10);
  sample.content().metadata.trial_id = trial;
  sample.content().metadata.metric_value = loss;
  std::filesystem::create_directories(dir);
  save_checkpoint(sample.content(), checkpoint_path(dir, step));
}

std::vector<std::string> names(const std::filesystem::path& dir) {
  return testing::file_names_in(dir);
}

}  // namespace

TEST_CASE("keep_latest and keep_best decide which files of a trial stay",
          "[unit][checkpoint][retention]") {
  ScratchDir dir;
  auto ckpt = dir.path() / "trials/7/checkpoints";
  // step: loss   100: 0.9  200: 0.2 (best)  300: 0.5  400: 0.4  500: 0.7
  for (auto [step, loss] : std::vector<std::pair<int, double>>{
           {100, 0.9}, {200, 0.2}, {300, 0.5}, {400, 0.4}, {500, 0.7}})
    save_step(ckpt, 7, step, loss);
  RetentionPolicy policy{.keep_latest = 2, .keep_best = 1, .keep_experiment_best = 0,
                         .metric = "val_loss", .smaller_is_better = true};
  SECTION("plan") {
    auto files = scan_checkpoints(ckpt, {.experiment = std::nullopt, .trial_id = 7}, "val_loss");
    decide_retention(files, policy, {100}, {});
    REQUIRE(files.size() == 5);
    CHECK(files[0].kept_by == std::vector<std::string>{"referenced"});
    CHECK(files[1].kept_by == std::vector<std::string>{"best"});
    CHECK(files[2].kept_by.empty());
    CHECK(files[3].kept_by == std::vector<std::string>{"latest"});
    CHECK(files[4].kept_by == std::vector<std::string>{"newest-valid", "latest"});
  }
  SECTION("apply") {
    auto deleted = apply_retention(ckpt, policy, {.experiment = "mnist-asha", .trial_id = 7});
    CHECK(deleted.size() == 2);
    CHECK(names(ckpt) == std::vector<std::string>{"step-200.h5", "step-400.h5", "step-500.h5"});
  }
  SECTION("larger is better") {
    policy.smaller_is_better = false;
    policy.keep_latest = 1;
    apply_retention(ckpt, policy, {.experiment = "mnist-asha", .trial_id = 7});
    CHECK(names(ckpt) == std::vector<std::string>{"step-100.h5", "step-500.h5"});
  }
}

TEST_CASE("the newest valid checkpoint survives any policy, invalid files are left alone",
          "[unit][checkpoint][retention]") {
  ScratchDir dir;
  auto ckpt = dir.path() / "trials/1/checkpoints";
  save_step(ckpt, 1, 10, 0.1);
  save_step(ckpt, 1, 20, 0.5);
  testing::write_bytes(checkpoint_path(ckpt, 30), "not hdf5");
  RetentionPolicy nothing{.keep_latest = 0, .keep_best = 0, .keep_experiment_best = 0,
                          .metric = "val_loss", .smaller_is_better = true};
  apply_retention(ckpt, nothing, {.experiment = std::nullopt, .trial_id = 1});
  CHECK(names(ckpt) == std::vector<std::string>{"step-20.h5", "step-30.h5"});
}

TEST_CASE("keep_experiment_best keeps the best checkpoints over all trials",
          "[unit][checkpoint][retention]") {
  ScratchDir dir;
  auto exp = dir.path();
  save_step(dlx::store::checkpoint_dir(exp, 0), 0, 100, 0.30);
  save_step(dlx::store::checkpoint_dir(exp, 0), 0, 200, 0.50);
  save_step(dlx::store::checkpoint_dir(exp, 1), 1, 100, 0.10);
  save_step(dlx::store::checkpoint_dir(exp, 1), 1, 200, 0.60);
  save_step(dlx::store::checkpoint_dir(exp, 1), 1, 300, 0.20);
  RetentionPolicy policy{.keep_latest = 1, .keep_best = 0, .keep_experiment_best = 2,
                         .metric = "val_loss", .smaller_is_better = true};
  auto plan = plan_experiment_retention(exp, policy);
  REQUIRE(plan.size() == 2);
  CHECK(plan[0][0].kept_by.empty());  // 0.30 is third over the experiment
  CHECK(plan[1][0].kept_by == std::vector<std::string>{"experiment-best"});
  CHECK(plan[1][2].kept_by == std::vector<std::string>{"newest-valid", "latest", "experiment-best"});
  // A trial applying retention after its own save sees the other trials' files too.
  apply_retention(dlx::store::checkpoint_dir(exp, 1), policy,
                  {.experiment = std::nullopt, .trial_id = 1});
  CHECK(names(dlx::store::checkpoint_dir(exp, 1)) ==
        std::vector<std::string>{"step-100.h5", "step-300.h5"});
  CHECK(names(dlx::store::checkpoint_dir(exp, 0)).size() == 2);  // not its files to delete
}
