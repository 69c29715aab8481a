// SPDX-License-Identifier: Apache-2.0
#include <cmath>

#include <catch2/catch.hpp>

#include "dlx/record/trial_record.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using namespace dlx::record;
using dlx::checkpoint::testing::sample_record;
using dlx::checkpoint::testing::ScratchDir;

namespace {

// Element-wise equality where NaN (an absent value) equals NaN.
bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

void check_same_table(const MetricTable& loaded, const MetricTable& saved) {
  CHECK(loaded.steps() == saved.steps());
  CHECK(same_values(loaded.wall_times(), saved.wall_times()));
  REQUIRE(loaded.names().size() == saved.names().size());
  for (const auto& name : saved.names()) {
    CAPTURE(name);
    REQUIRE(loaded.index_of(name).has_value());
    CHECK(same_values(loaded.dense(name), saved.dense(name)));
  }
  CHECK(loaded == saved);
}

void check_same_record(const TrialRecord& loaded, const TrialRecord& saved) {
  CHECK(loaded.experiment == saved.experiment);
  CHECK(loaded.trial_id == saved.trial_id);
  CHECK(loaded.state == saved.state);
  CHECK(loaded.exit_code == saved.exit_code);
  CHECK(loaded.stop_reason == saved.stop_reason);
  CHECK(loaded.restarts == saved.restarts);
  CHECK(loaded.world_size == saved.world_size);
  CHECK(loaded.nodes == saved.nodes);
  CHECK(loaded.slurm_job_id == saved.slurm_job_id);
  CHECK(loaded.hparams == saved.hparams);
  CHECK(loaded.hparams.dump() == saved.hparams.dump());  // same order, same types
  CHECK(loaded.created_unix == saved.created_unix);
  CHECK(loaded.updated_unix == saved.updated_unix);
  check_same_table(loaded.training, saved.training);
  check_same_table(loaded.validation, saved.validation);
}

}  // namespace

TEST_CASE("trial record round trip: every field, hparam type and both metric tables",
          "[unit][trial_record]") {
  ScratchDir dir;
  auto path = dir.path() / kTrialFileName;
  auto saved = sample_record();
  save_trial_record(saved, path);
  auto loaded = load_trial_record(path);
  check_same_record(loaded, saved);
  CHECK(loaded.training.last("accuracy") == 0.6);
  CHECK(loaded.validation.best("val_loss", true) == 1.0);
}

TEST_CASE("trial record round trip: empty tables, empty strings, no hparams",
          "[unit][trial_record]") {
  ScratchDir dir;
  auto path = dir.path() / kTrialFileName;
  TrialRecord saved;
  saved.trial_id = 0;
  SECTION("fresh record") {}
  SECTION("negative exit code, huge ids, unsigned hparam") {
    saved.trial_id = std::numeric_limits<std::int64_t>::max();
    saved.exit_code = -9;
    saved.state = "failed";
    saved.hparams["big"] = std::uint64_t{18446744073709551615u};
    saved.hparams["tiny"] = 1e-300;
  }
  SECTION("hyperparameter values that are null, lists and mappings (Determined's)") {
    saved.hparams["note"] = nullptr;
    saved.hparams["optim.betas"] = nlohmann::ordered_json::array({0.9, 0.999});
    saved.hparams["augment"] = nlohmann::ordered_json::parse(R"({"flip":true,"crop":[32,32]})");
    saved.hparams["empty"] = nlohmann::ordered_json::array();
  }
  SECTION("metric columns with steps but no values yet") {
    saved.training.append(5, {});
    saved.validation.append(5, {{"val_loss", std::numeric_limits<double>::quiet_NaN()}});
  }
  save_trial_record(saved, path);
  check_same_record(load_trial_record(path), saved);
}

TEST_CASE("load_trial_record_if_exists distinguishes absent from present", "[unit][trial_record]") {
  ScratchDir dir;
  auto path = dir.path() / kTrialFileName;
  CHECK_FALSE(load_trial_record_if_exists(path).has_value());
  CHECK_FALSE(load_trial_record_if_exists(dir.path() / "no-such-dir" / kTrialFileName));
  save_trial_record(sample_record(), path);
  auto loaded = load_trial_record_if_exists(path);
  REQUIRE(loaded.has_value());
  CHECK(loaded->trial_id == 17);
}

TEST_CASE("saving again replaces the record", "[unit][trial_record]") {
  ScratchDir dir;
  auto path = dir.path() / kTrialFileName;
  auto record = sample_record();
  save_trial_record(record, path);
  record.state = "failed";
  record.restarts = 2;
  record.training.append(400, {{"loss", 0.5}});
  save_trial_record(record, path);
  auto loaded = load_trial_record(path);
  CHECK(loaded.state == "failed");
  CHECK(loaded.restarts == 2);
  CHECK(loaded.training.rows() == 4);
  CHECK(loaded.training.last("loss") == 0.5);
}
