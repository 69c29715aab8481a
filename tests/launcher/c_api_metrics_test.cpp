// SPDX-License-Identifier: Apache-2.0
// The C API's names-once reporting (dlx_trial_metric_names, dlx_trial_report_*_values), as a
// binding uses it: the rows land in trial.h5 as the name-per-report calls' do, a set registered
// again gets its number again, and every misuse is a status with a message naming it.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "dlx/c_api.h"
#include "dlx/record/trial_record.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

// Trial 0 of an experiment in a fresh directory, outside Slurm, no communicator.
struct TrialInDirectory {
  fs::path directory;
  dlx_trial* trial = nullptr;

  TrialInDirectory() {
    char pattern[] = "/tmp/dlx-c-api-metrics.XXXXXX";
    directory = ::mkdtemp(pattern);
    ::setenv("DLX_EXPERIMENT_DIR", directory.c_str(), 1);
    ::setenv("DLX_TRIAL_ID", "0", 1);
    ::setenv("DLX_HPARAMS", "{}", 1);
    ::setenv("DLX_LATEST_CHECKPOINT", "", 1);
    ::setenv("RANK", "0", 1);
    ::setenv("WORLD_SIZE", "1", 1);
    REQUIRE(dlx_trial_create(DLX_TRIAL_NO_COMMUNICATOR, &trial) == DLX_OK);
  }
  ~TrialInDirectory() {
    if (trial != nullptr) dlx_trial_destroy(trial);
    fs::remove_all(directory);
  }
  dlx::record::TrialRecord finish_and_load() {
    REQUIRE(dlx_trial_finish(trial) == DLX_OK);
    dlx_trial_destroy(trial);
    trial = nullptr;
    return dlx::record::load_trial_record(directory / "trials" / "0" / dlx::record::kTrialFileName);
  }
};

}  // namespace

TEST_CASE("names-once reports land in trial.h5 like reports with names", "[unit][c_api][metrics]") {
  TrialInDirectory t;
  const char* loss_lr[] = {"loss", "lr"};
  const char* accuracy[] = {"accuracy"};
  std::uint32_t training = 99, validation = 99, again = 99;
  REQUIRE(dlx_trial_metric_names(t.trial, loss_lr, 2, &training) == DLX_OK);
  REQUIRE(dlx_trial_metric_names(t.trial, accuracy, 1, &validation) == DLX_OK);
  REQUIRE(dlx_trial_metric_names(t.trial, loss_lr, 2, &again) == DLX_OK);
  CHECK(training == 0);
  CHECK(validation == 1);
  CHECK(again == training);  // the same names: the same number
  for (std::int64_t step = 1; step <= 3; ++step) {
    const double values[] = {1.0 / static_cast<double>(step), 0.5};
    REQUIRE(dlx_trial_report_training_values(t.trial, step, training, values) == DLX_OK);
  }
  const double measured[] = {0.75};
  int next = -1;
  REQUIRE(dlx_trial_report_validation_values(t.trial, 3, validation, measured, &next) == DLX_OK);
  CHECK(next == DLX_NEXT_TRAIN);  // no searcher length: train on
  // Mixed with a name-per-report call: one table.
  const char* names[] = {"loss"};
  const double values[] = {0.125};
  REQUIRE(dlx_trial_report_training(t.trial, 4, names, values, 1) == DLX_OK);
  const auto record = t.finish_and_load();
  CHECK(record.training.steps() == std::vector<std::int64_t>{1, 2, 3, 4});
  CHECK(record.training.series("loss").values == std::vector<double>{1.0, 0.5, 1.0 / 3.0, 0.125});
  CHECK(record.training.series("lr").values == std::vector<double>{0.5, 0.5, 0.5});
  CHECK(record.validation.series("accuracy").values == std::vector<double>{0.75});
}

TEST_CASE("names-once misuse is a status and a message", "[unit][c_api][metrics]") {
  TrialInDirectory t;
  const double values[] = {1.0, 2.0};
  std::uint32_t number = 0;
  SECTION("a number never handed out") {
    CHECK(dlx_trial_report_training_values(t.trial, 1, 7, values) == DLX_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(dlx_last_error(), Contains("metric names 7 were not registered"));
  }
  SECTION("a name given twice") {
    const char* twice[] = {"loss", "loss"};
    CHECK(dlx_trial_metric_names(t.trial, twice, 2, &number) == DLX_ERROR_CONFIG);
    CHECK_THAT(dlx_last_error(), Contains("cannot register metric names: 'loss' is given twice"));
  }
  SECTION("a name trial.h5 cannot hold") {
    const char* division_slash[] = {"val\u2215loss"};
    CHECK(dlx_trial_metric_names(t.trial, division_slash, 1, &number) == DLX_ERROR_CONFIG);
    CHECK_THAT(dlx_last_error(),
               Contains("cannot register metric names: metric name 'val\u2215loss' contains U+2215"));
  }
  SECTION("NULL names, values or a NULL name") {
    CHECK(dlx_trial_metric_names(t.trial, nullptr, 1, &number) == DLX_ERROR_INVALID_ARGUMENT);
    const char* one_null[] = {"loss", nullptr};
    CHECK(dlx_trial_metric_names(t.trial, one_null, 2, &number) == DLX_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(dlx_last_error(), Contains("a metric name is NULL"));
    const char* loss[] = {"loss"};
    REQUIRE(dlx_trial_metric_names(t.trial, loss, 1, &number) == DLX_OK);
    CHECK(dlx_trial_report_training_values(t.trial, 1, number, nullptr) == DLX_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(dlx_last_error(), Contains("metric values is NULL"));
  }
}
