// SPDX-License-Identifier: Apache-2.0
// One context per process (launcher/env/trial_context.hpp): a trainer's whole run (dlx::Trial's
// record, its checkpoint settings, resume, a save and the searcher's answer at the target length)
// reads the frozen experiment.yaml once; the context itself reads nothing until asked, then once.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "dlx/config/hparam_tree.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/env/trial_context.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/searcher/journal.hpp"
#include "dlx/trial.hpp"
#include "open_counter.hpp"
#include "process_helpers.hpp"

namespace fs = std::filesystem;
using dlx::testing::OpenCounter;

namespace {

constexpr const char* kExperiment =
    "name: one-read\nentrypoint: x\nseed: 3\n"
    "searcher: {name: async_halving, metric: loss, max_trials: 2, divisor: 2, max_rungs: 2, "
    "max_length: {batches: 8}}\n"
    "hyperparameters:\n  x: {type: double, minval: 0, maxval: 1}\n";

// Sets the variables for the scope of a test case, and restores them after.
class ScopedVariables {
 public:
  explicit ScopedVariables(std::vector<std::pair<std::string, std::string>> values) {
    for (auto& [name, value] : values) {
      const char* old = std::getenv(name.c_str());
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      ::setenv(name.c_str(), value.c_str(), 1);
    }
  }
  ~ScopedVariables() {
    for (const auto& [name, old] : saved_) {
      if (old) ::setenv(name.c_str(), old->c_str(), 1);
      else ::unsetenv(name.c_str());
    }
  }
  ScopedVariables(const ScopedVariables&) = delete;
  ScopedVariables& operator=(const ScopedVariables&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace

TEST_CASE("trial context: reads experiment.yaml only when asked, then once", "[sdk][context]") {
  dlx::test::TempDir dir("context-once");
  std::ofstream(dir.path() / "experiment.yaml") << kExperiment;
  OpenCounter opens(dir.path() / "experiment.yaml");
  dlx::env::TrialContext context({{"DLX_EXPERIMENT_DIR", dir.path().string()}, {"DLX_TRIAL_ID", "1"},
                                  {"DLX_HPARAMS", R"({"x": 0.5})"}},
                                 dlx::env::TaskPlacement{});
  CHECK(opens.take() == 0);
  REQUIRE(context.experiment() != nullptr);
  CHECK(context.experiment()->searcher.metric == "loss");
  CHECK(&context.frozen_experiment() == context.experiment());
  CHECK(context.experiment_name() == "one-read");
  CHECK(opens.take() == 1);
}

TEST_CASE("trial context: a directory without experiment.yaml has no experiment, and a trial that needs one says so",
          "[sdk][context]") {
  dlx::test::TempDir dir("context-none");
  dlx::env::TrialContext context({{"DLX_EXPERIMENT_DIR", dir.path().string()}}, dlx::env::TaskPlacement{});
  CHECK(context.experiment() == nullptr);
  CHECK(context.experiment_name() == dir.path().filename().string());
  CHECK_THROWS_WITH(context.frozen_experiment(), Catch::Contains((dir.path() / "experiment.yaml").string()));
}

TEST_CASE("trial context: a trainer's run reads experiment.yaml once", "[sdk][context]") {
  dlx::test::TempDir dir("trainer-once");
  std::ofstream(dir.path() / "experiment.yaml") << kExperiment;
  // As dlx-launch does before it starts the trainer: the ticket's work from the searcher.
  dlx::searcher::Coordinator coordinator(dlx::config::parse_experiment(kExperiment, "experiment.yaml"),
                                         dir.path() / "journal");
  const auto work = coordinator.request_work(0);
  REQUIRE(work.kind == dlx::searcher::Work::Kind::train);
  REQUIRE(work.target_length > 0);
  const fs::path checkpoints = dir.path() / "trials" / std::to_string(work.trial) / "checkpoints";
  ScopedVariables variables({{"DLX_EXPERIMENT_DIR", dir.path().string()},
                             {"DLX_TRIAL_ID", std::to_string(work.trial)},
                             {"DLX_HPARAMS", dlx::config::nest_hyperparameters(work.hparams).dump()},
                             {"DLX_CHECKPOINT_DIR", checkpoints.string()},
                             {"DLX_TARGET_LENGTH", std::to_string(work.target_length)}});

  const auto journal_records = dlx::searcher::Journal(dir.path() / "journal").read().records.size();
  OpenCounter opens(dir.path() / "experiment.yaml");
  {
    dlx::TrialOptions options;
    options.communicator = false;  // a framework program's trial: no MPI
    options.checkpoint_signals = {};
    dlx::Trial trial(options);                 // the record
    CHECK_FALSE(trial.resume().has_value());  // the checkpoint settings
    const std::vector<float> weights(16, 0.25f);
    dlx::TrainingState state;
    state.step = work.target_length;
    state.tensors.push_back({.name = "model/w", .dtype = dlx::checkpoint::DType::float32, .shape = {16},
                             .data = weights.data()});
    trial.save_checkpoint(state);
    trial.report_validation(work.target_length, {{"loss", 0.5}});  // the searcher's coordinator
    trial.finish();
  }
  // The searcher answered: the report reached the journal through the coordinator.
  CHECK(dlx::searcher::Journal(dir.path() / "journal").read().records.size() > journal_records);
  CHECK(fs::exists(checkpoints / ("step-" + std::to_string(work.target_length) + ".h5")));
  CHECK(opens.take() == 1);
}
