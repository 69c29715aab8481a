// SPDX-License-Identifier: Apache-2.0
// TrialRecordWriter (dlx/record/trial_record_writer.hpp): extending the file it wrote last
// gives the same record as writing everything again: rows appended, resumes' drops (found in the
// file by binary search), new metrics, changed attributes and restart events; a failed append
// leaves the previous file in place; a file whose tables were made contiguous (format 2) is still
// read, and the appended one is readable by h5py (check_sample_trial.sh).
#include <sys/stat.h>

#include <cmath>
#include <limits>

#include <catch2/catch.hpp>

#include "dlx/record/trial_record.hpp"
#include "dlx/record/trial_record_writer.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using namespace dlx::record;
using dlx::checkpoint::testing::sample_record;
using dlx::checkpoint::testing::ScratchDir;
using Catch::Matchers::Contains;

namespace {

// The changes a writer would hand over: rows of `full` from `first_row` on.
MetricTableChanges tail_of(const MetricTable& full, std::size_t first_row,
                           std::optional<std::int64_t> drop_from = std::nullopt) {
  MetricTableChanges changes{drop_from, {}};
  for (const auto& name : full.names()) changes.rows.add_name(name);
  for (std::size_t row = first_row; row < full.rows(); ++row) {
    changes.rows.open_row(full.steps()[row], full.wall_times()[row]);
    for (const auto& cell : full.cells(row)) changes.rows.set(cell.metric, cell.value);
  }
  return changes;
}

}  // namespace

TEST_CASE("appending rows gives the record a whole write would", "[unit][trial_record]") {
  ScratchDir dir;
  const auto path = dir.path() / kTrialFileName;
  auto record = sample_record();
  TrialRecordWriter writer(path);
  CHECK_FALSE(writer.can_append());
  writer.write(record);
  REQUIRE(writer.can_append());
  const auto training_before = record.training.rows(), validation_before = record.validation.rows();
  record.training.append(400, {{"loss", 0.5}, {"grad_norm", 3.0}}, 1400.0);  // a new metric
  record.training.append(500, {{"loss", 0.25}}, 1500.0);
  record.validation.append(500, {{"val_loss", 0.75}}, 1501.0);
  record.state = "completed";
  record.restart_events.push_back({.cause = "notice", .reason = "requeue: checkpoint at step 300 after SIGUSR2",
                                   .unix_time = 1450, .resumed_step = 300, .steps_lost = 0,
                                   .seconds_lost = 1.5, .downtime_seconds = 12, .previous_nodes = "n1,n2"});
  record.metrics_log = 7;
  writer.append(record, tail_of(record.training, training_before), tail_of(record.validation, validation_before));
  const auto loaded = load_trial_record_file(path);
  CHECK(loaded.state == "completed");
  CHECK(loaded.metrics_log == 7);
  CHECK(loaded.restart_events == record.restart_events);
  CHECK(loaded.training == record.training);
  CHECK(loaded.validation == record.validation);
  CHECK(std::isnan(loaded.training.dense("grad_norm")[0]));  // a new column, NaN before its first row

  SECTION("a second append, with the last restart event completed") {
    record.restart_events.back().steps_lost = 42;
    record.training.append(600, {{"loss", 0.125}}, 1600.0);
    writer.append(record, tail_of(record.training, record.training.rows() - 1), tail_of(record.validation, record.validation.rows()));
    const auto again = load_trial_record_file(path);
    CHECK(again.restart_events == record.restart_events);
    CHECK(again.training == record.training);
  }
  SECTION("a resume's drop reaches the rows in the file") {
    // Resumed from step 200: the file's rows from 300 on go, then 300 is reported again.
    MetricTableChanges training{300, {}};
    training.rows.append(300, {{"loss", 9.0}}, 2300.0);
    MetricTableChanges validation{300, {}};
    writer.append(record, training, validation);
    record.training.append(300, {{"loss", 9.0}}, 2300.0);  // the same, on the whole record
    record.validation.drop_from(300);
    const auto again = load_trial_record_file(path);
    CHECK(again.training.steps() == std::vector<std::int64_t>{100, 200, 300});
    CHECK(again.training == record.training);
    CHECK(again.validation == record.validation);
    CHECK(again.training.index_of("grad_norm").has_value());  // its column stays (all NaN now)
  }
}

TEST_CASE("a failed append leaves the previous trial.h5 and no temporary file", "[unit][trial_record]") {
  ScratchDir dir;
  const auto path = dir.path() / kTrialFileName;
  auto record = sample_record();
  TrialRecordWriter writer(path);
  writer.write(record);
  MetricTableChanges bad{std::nullopt, {}};
  bad.rows.append(400, {{"val\u2215loss", 1.0}});  // a name trial.h5 cannot hold
  CHECK_THROWS_WITH(writer.append(record, bad, MetricTableChanges{}),
                    Contains("cannot save trial record " + path.string()) && Contains("metric name 'val\u2215loss'"));
  CHECK(testing::file_names_in(dir.path()) == std::vector<std::string>{kTrialFileName});
  CHECK(load_trial_record_file(path).training == record.training);
  // The writer still appends to its last good file.
  MetricTableChanges good{std::nullopt, {}};
  good.rows.append(400, {{"loss", 1.0}});
  writer.append(record, good, MetricTableChanges{});
  CHECK(load_trial_record_file(path).training.rows() == record.training.rows() + 1);
}

TEST_CASE("append copies the file this writer published, whatever is at the path since", "[unit][trial_record]") {
  ScratchDir dir;
  const auto path = dir.path() / kTrialFileName;
  auto record = sample_record();
  TrialRecordWriter writer(path);
  writer.write(record);
  std::filesystem::remove(path);  // gone (or replaced): the writer kept its own file open
  MetricTableChanges more{std::nullopt, {}};
  more.rows.append(400, {{"loss", 0.5}});
  writer.append(record, more, MetricTableChanges{});
  const auto loaded = load_trial_record_file(path);
  CHECK(loaded.training.rows() == record.training.rows() + 1);
  struct stat status {};
  REQUIRE(::stat(path.c_str(), &status) == 0);
  CHECK((status.st_mode & 0777) == 0640);
}

TEST_CASE("append without a file of this writer is refused", "[unit][trial_record]") {
  ScratchDir dir;
  TrialRecordWriter writer(dir.path() / kTrialFileName);
  CHECK_THROWS_WITH(writer.append(sample_record(), MetricTableChanges{}, MetricTableChanges{}),
                    Contains("this writer has not written it"));
}

TEST_CASE("a metric named with '/' (TensorBoard's style) is kept as written through writes and appends",
          "[unit][trial_record]") {
  ScratchDir dir;
  const auto path = dir.path() / kTrialFileName;
  auto record = sample_record();
  record.training.append(400, {{"train/loss", 0.5}}, 1400.0);
  TrialRecordWriter writer(path);
  writer.write(record);
  const auto training_before = record.training.rows(), validation_before = record.validation.rows();
  record.training.append(500, {{"train/loss", 0.25}, {"train/lr/group-0", 0.1}}, 1500.0);  // one more, nested
  record.validation.append(500, {{"val/acc@1", 0.75}}, 1501.0);
  writer.append(record, tail_of(record.training, training_before), tail_of(record.validation, validation_before));
  const auto loaded = load_trial_record_file(path);
  CHECK(loaded.training == record.training);
  CHECK(loaded.validation == record.validation);
  CHECK(loaded.training.dense("train/loss")[record.training.rows() - 1] == 0.25);
  CHECK(loaded.validation.dense("val/acc@1").back() == 0.75);
  // The datasets' names as h5py sees them: tests/launcher/python_sdk_test.py.
}
