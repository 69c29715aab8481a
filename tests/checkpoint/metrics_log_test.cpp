// SPDX-License-Identifier: Apache-2.0
// The metrics log (dlx/record/metrics_log.hpp): its records round trip, a torn or damaged tail
// is ignored at any byte, a chain of generations is applied in order, and trial.h5 with its logs
// is what load_trial_record returns; format 1 records still load.
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <vector>

#include <catch2/catch.hpp>

#include "dlx/record/metrics_log.hpp"
#include "dlx/record/trial_record.hpp"
#include "h5_edit.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using namespace dlx::record;
using Catch::Matchers::Contains;
using dlx::checkpoint::testing::ScratchDir;

namespace {

using Values = std::vector<std::pair<std::uint32_t, double>>;

// A log: loss and accuracy named, training rows 1..3, a validation row, a drop, a replayed row.
std::vector<std::byte> sample_log() {
  std::vector<std::byte> log;
  append_metrics_log_header(log);
  append_metric_name_record(log, 0, "loss");
  append_metric_row_record(log, MetricTableId::training, 1, 1000.5, Values{{0, 2.0}});
  append_metric_row_record(log, MetricTableId::training, 2, 1001.5, Values{{0, 1.5}});
  append_metric_name_record(log, 1, "accuracy");
  append_metric_row_record(log, MetricTableId::validation, 2, 1001.75, Values{{1, 0.5}, {0, 1.4}});
  append_metric_row_record(log, MetricTableId::training, 3, 1002.5, Values{{0, 1.0}, {1, 0.25}});
  append_metric_drop_record(log, MetricTableId::both, 3);  // a resume from step 2
  append_metric_row_record(log, MetricTableId::training, 3, 1003.5, Values{{0, 0.9}});
  return log;
}

void write_file(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

std::string log_error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const RecordError& e) {
    return e.what();
  }
  FAIL("no RecordError");
  return {};
}

}  // namespace

TEST_CASE("a metrics log's records apply as the writer meant them", "[unit][metrics_log]") {
  TrialRecord record;
  const auto log = sample_log();
  const auto replay = apply_metrics_log(log, record, "sample.log");
  CHECK(replay.records == 8);
  CHECK(replay.valid_bytes == log.size());
  CHECK(replay.ignored_bytes == 0);
  CHECK(record.training.steps() == std::vector<std::int64_t>{1, 2, 3});
  CHECK(record.training.wall_times() == std::vector<double>{1000.5, 1001.5, 1003.5});
  CHECK(record.training.dense("loss") == std::vector<double>{2.0, 1.5, 0.9});
  const auto accuracy = record.training.dense("accuracy");  // reported once, then dropped
  REQUIRE(accuracy.size() == 3);
  CHECK((std::isnan(accuracy[0]) && std::isnan(accuracy[1]) && std::isnan(accuracy[2])));
  CHECK(record.training.index_of("accuracy").has_value());  // the name stays (an all-NaN column)
  CHECK(record.validation.steps() == std::vector<std::int64_t>{2});
  CHECK(record.validation.dense("accuracy") == std::vector<double>{0.5});
  CHECK(record.validation.dense("loss") == std::vector<double>{1.4});
}

TEST_CASE("a row at or before the last step replaces the rows from there", "[unit][metrics_log]") {
  TrialRecord record;
  MetricRowApplier applier(record);
  applier.define(0, "loss");
  for (std::int64_t step : {10, 20, 30})
    applier.row(MetricTableId::training, step, 0, Values{{0, static_cast<double>(step)}});
  applier.row(MetricTableId::training, 20, 0, Values{{0, -1}});
  CHECK(record.training.steps() == std::vector<std::int64_t>{10, 20});
  CHECK(record.training.dense("loss") == std::vector<double>{10, -1});
}

TEST_CASE("a log cut at any byte applies the records before the cut", "[unit][metrics_log]") {
  const auto log = sample_log();
  TrialRecord whole;
  apply_metrics_log(log, whole, "whole");
  std::uint64_t previous_records = 0;
  for (std::size_t size = kMetricsLogHeaderBytes; size <= log.size(); ++size) {
    TrialRecord record;
    const auto replay = apply_metrics_log(std::span(log).first(size), record, "cut");
    CHECK(replay.valid_bytes + replay.ignored_bytes == size);
    CHECK(replay.records >= previous_records);  // never fewer for a longer prefix
    previous_records = replay.records;
  }
  CHECK(previous_records == 8);
  // A header cut short (a writer killed before its fsync) is an empty log, not an error.
  TrialRecord record;
  CHECK(apply_metrics_log(std::span(log).first(5), record, "short").records == 0);
}

TEST_CASE("a damaged record ends the log there", "[unit][metrics_log]") {
  auto log = sample_log();
  // The fourth record's payload: the header, then three records of known sizes before it.
  std::vector<std::byte> prefix;
  append_metrics_log_header(prefix);
  append_metric_name_record(prefix, 0, "loss");
  append_metric_row_record(prefix, MetricTableId::training, 1, 1000.5, Values{{0, 2.0}});
  append_metric_row_record(prefix, MetricTableId::training, 2, 1001.5, Values{{0, 1.5}});
  log[prefix.size() + kMetricsLogRecordHeaderBytes + 2] ^= std::byte{0x40};
  TrialRecord record;
  const auto replay = apply_metrics_log(log, record, "damaged");
  CHECK(replay.records == 3);
  CHECK(replay.valid_bytes == prefix.size());
  CHECK(record.training.steps() == std::vector<std::int64_t>{1, 2});
  // A size past the limit is damage too, not an allocation.
  auto oversized = sample_log();
  const std::uint32_t huge = kMaxMetricsLogPayloadBytes + 1;
  std::memcpy(oversized.data() + kMetricsLogHeaderBytes, &huge, sizeof huge);
  TrialRecord other;
  CHECK(apply_metrics_log(oversized, other, "oversized").records == 0);
}

TEST_CASE("a file that is not a metrics log, or is newer, is refused by name", "[unit][metrics_log]") {
  TrialRecord record;
  std::vector<std::byte> other(32, std::byte{'x'});
  CHECK_THAT(log_error_of([&] { apply_metrics_log(other, record, "/t/metrics.1.log"); }),
             Contains("/t/metrics.1.log is not a dlx metrics log"));
  auto newer = sample_log();
  newer[8] = std::byte{9};
  CHECK_THAT(log_error_of([&] { apply_metrics_log(newer, record, "/t/metrics.2.log"); }),
             Contains("/t/metrics.2.log is metrics log format 9, newer than this dlx reads (1)"));
  std::vector<std::byte> undefined;
  append_metrics_log_header(undefined);
  append_metric_row_record(undefined, MetricTableId::training, 1, 0, Values{{7, 1.0}});
  CHECK_THAT(log_error_of([&] { apply_metrics_log(undefined, record, "/t/metrics.3.log"); }),
             Contains("metric id 7 is used before it is named"));
}

TEST_CASE("metric names trial.h5 cannot hold are named with the reason", "[unit][metrics_log]") {
  CHECK_FALSE(metric_name_problem("val_loss"));
  CHECK_FALSE(metric_name_problem("top-1 accuracy (%)"));
  CHECK_THAT(*metric_name_problem(""), Contains("empty"));
  CHECK_THAT(*metric_name_problem("steps"), Contains("'steps' is a name trial.h5 keeps for itself"));
  CHECK_THAT(*metric_name_problem("wall_time"), Contains("'wall_time' is a name trial.h5 keeps"));
  CHECK_FALSE(metric_name_problem("train/loss"));  // TensorBoard's style: its dataset is train\u2215loss
  CHECK_THAT(*metric_name_problem("train\u2215loss"), Contains("contains U+2215 (a division slash), which trial.h5 "
                                                                "keeps for the '/' of metric names; write '/' itself"));
  CHECK_THAT(*metric_name_problem(std::string(2000, 'a')), Contains("2000 bytes is over the 1024-byte limit"));
}

TEST_CASE("log names and generations", "[unit][metrics_log]") {
  CHECK(metrics_log_name(12) == "metrics.12.log");
  CHECK(metrics_log_generation("metrics.12.log") == 12u);
  for (const char* name : {"metrics.0.log", "metrics.012.log", "metrics..log", "metrics.1x.log",
                           "metrics.1.log.tmp", "trial.h5", "metrics.-1.log"})
    CHECK_FALSE(metrics_log_generation(name));
}

TEST_CASE("load_trial_record applies the chain of logs trial.h5 names", "[unit][metrics_log]") {
  ScratchDir dir;
  const auto path = dir.path() / kTrialFileName;
  auto record = testing::sample_record();
  record.metrics_log = 4;
  save_trial_record(record, path);
  const auto training_rows = record.training.rows();
  // Generation 3 is older than trial.h5: a leftover that must not be applied.
  write_file(dir.path() / "metrics.3.log", sample_log());
  std::vector<std::byte> fourth, fifth;
  append_metrics_log_header(fourth);
  append_metric_name_record(fourth, 0, "loss");
  append_metric_row_record(fourth, MetricTableId::training, 1000, 2000.0, Values{{0, 0.5}});
  write_file(dir.path() / "metrics.4.log", fourth);
  append_metrics_log_header(fifth);
  append_metric_name_record(fifth, 5, "loss");  // ids are per file
  append_metric_row_record(fifth, MetricTableId::training, 1001, 2001.0, Values{{5, 0.25}});
  write_file(dir.path() / "metrics.5.log", fifth);

  const auto loaded = load_trial_record(path);
  REQUIRE(loaded.training.rows() == training_rows + 2);
  CHECK(loaded.training.steps()[training_rows] == 1000);
  CHECK(loaded.training.steps()[training_rows + 1] == 1001);
  CHECK(loaded.training.dense("loss")[training_rows + 1] == 0.25);
  CHECK(loaded.training.wall_times()[training_rows + 1] == 2001.0);
  CHECK(loaded.metrics_log == 6);  // the first generation not found
  CHECK(load_trial_record_file(path).training.rows() == training_rows);

  // A writer that saves what it loaded names 6 and retires the rest.
  save_trial_record(loaded, path);
  CHECK(retire_metrics_logs(dir.path(), loaded.metrics_log) == 3);
  CHECK(testing::file_names_in(dir.path()) == std::vector<std::string>{kTrialFileName});
  CHECK(load_trial_record(path).training.steps() == loaded.training.steps());
}

TEST_CASE("a FIFO or a link in a log's place is refused without waiting", "[unit][metrics_log]") {
  ScratchDir dir;
  const auto path = dir.path() / kTrialFileName;
  save_trial_record(testing::sample_record(), path);  // names generation 1
  REQUIRE(::mkfifo((dir.path() / "metrics.1.log").c_str(), 0600) == 0);
  CHECK_THAT(log_error_of([&] { load_trial_record(path); }), Contains("metrics.1.log is a FIFO"));
  std::filesystem::remove(dir.path() / "metrics.1.log");
  std::filesystem::create_symlink("/etc/passwd", dir.path() / "metrics.1.log");
  CHECK_THAT(log_error_of([&] { load_trial_record(path); }), Contains("a symbolic link where dlx writes a file"));
}

TEST_CASE("a format 1 trial.h5 loads: no wall times, and 'wall_time' is a metric", "[unit][metrics_log]") {
  ScratchDir dir;
  const auto path = dir.path() / kTrialFileName;
  auto record = testing::sample_record();
  save_trial_record(record, path);
  // What dlx wrote before format 2: no wall_time datasets, no metrics_log; a user's metric
  // called wall_time is an ordinary dataset there.
  testing::make_metric_tables_contiguous(path);  // chunked only from format 3
  testing::remove_link(path, "/metrics/validation/wall_time");
  testing::remove_attribute(path, "metrics_log");
  testing::set_format_version(path, 1);
  const auto loaded = load_trial_record(path);
  CHECK(loaded.training.steps() == record.training.steps());
  REQUIRE(loaded.training.wall_times().size() == record.training.rows());
  for (double time : loaded.training.wall_times()) CHECK(std::isnan(time));
  CHECK(loaded.training.index_of("wall_time").has_value());  // format 1: one more metric
  REQUIRE(loaded.validation.wall_times().size() == record.validation.rows());
  CHECK_FALSE(loaded.validation.index_of("wall_time").has_value());
  CHECK(loaded.metrics_log == 1);
}

TEST_CASE("a chain of logs longer than a writer leaves is refused, not walked", "[unit][metrics_log]") {
  ScratchDir dir;
  const auto path = dir.path() / kTrialFileName;
  save_trial_record(testing::sample_record(), path);  // names generation 1
  std::vector<std::byte> header;
  append_metrics_log_header(header);
  for (int generation = 1; generation <= 1100; ++generation)
    write_file(dir.path() / metrics_log_name(static_cast<std::uint64_t>(generation)), header);
  CHECK_THAT(log_error_of([&] { load_trial_record(path); }),
             Contains("metrics.1.log and the 1023 metrics logs after it: dlx writes at most a few"));
}
