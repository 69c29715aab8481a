// SPDX-License-Identifier: Apache-2.0
// What a metrics log can cost its readers (issue 31, finding 4): the crafted logs of the finding
// (4,096 names then empty rows; rows repeating a step), valid record by record, applied with the
// heap counted (heap_meter.hpp). A reader must hold at most a small multiple of the log's bytes,
// and find each drop point by binary search, never by a scan from the first row.
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "crafted_metrics_logs.hpp"
#include "dlx/record/metrics_log.hpp"
#include "dlx/record/trial_record.hpp"
#include "heap_meter.hpp"
#include "test_support.hpp"

using namespace dlx::checkpoint;
using namespace dlx::record;
using dlx::testing::peak_heap_bytes_during;

namespace {

// The budget: four times the input's bytes, plus 2 MiB for what any read holds (names, their
// lookup, the vectors' growth). Padded columns needed over a thousand times the input.
std::size_t budget(std::size_t input_bytes) { return 4 * input_bytes + (std::size_t{2} << 20); }

// Steps as a reader looks at them, counted.
struct CountedSteps {
  const std::vector<std::int64_t>* steps;
  mutable std::size_t looked_at = 0;
  std::size_t size() const { return steps->size(); }
  std::int64_t operator[](std::size_t i) const {
    ++looked_at;
    return (*steps)[i];
  }
};

}  // namespace

TEST_CASE("a 1 MiB log of 4,096 names then empty rows costs memory in proportion to its bytes",
          "[unit][metrics_log][bounds]") {
  const auto log = dlx::record::testing::names_then_empty_rows(kMaxMetricNames, std::size_t{1} << 20);
  TrialRecord record;
  MetricsLogReplay replay;
  const auto peak = peak_heap_bytes_during([&] { replay = apply_metrics_log(log, record, "crafted.log"); });
  CAPTURE(log.size(), peak);
  CHECK(replay.valid_bytes == log.size());  // every record applied: a valid log, not a damaged one
  const auto rows = record.training.rows();
  CHECK(rows > 30000);
  CHECK(record.training.names().size() == kMaxMetricNames);
  CHECK(record.training.cell_count() == kMaxMetricNames);  // not rows x names
  CHECK(peak <= budget(log.size()));
  // As trial.h5's columns it is still the same table: one value per name, in the first row.
  CHECK(record.training.series("metric-4095").steps == std::vector<std::int64_t>{1});
}

TEST_CASE("memory per log byte does not grow with the number of names or rows", "[unit][metrics_log][bounds]") {
  // The same shape at 1/4, 1/2 and 1 MiB, and with 16 names instead of 4,096: the heap per log
  // byte stays within the budget's factor (padded columns grew with rows x names).
  const auto [names, bytes] = GENERATE(table<std::size_t, std::size_t>({
      {4096, 256u << 10}, {4096, 512u << 10}, {4096, 1u << 20}, {16, 1u << 20}}));
  const auto log = dlx::record::testing::names_then_empty_rows(names, bytes);
  TrialRecord record;
  const auto peak = peak_heap_bytes_during([&] { apply_metrics_log(log, record, "crafted.log"); });
  CAPTURE(names, log.size(), peak);
  CHECK(peak <= budget(log.size()));
}

TEST_CASE("a log of rows repeating a step replays in bounded memory, each drop a binary search",
          "[unit][metrics_log][bounds]") {
  const std::size_t increasing = 10000;
  const auto log = dlx::record::testing::repeated_steps(increasing, std::size_t{1} << 20);
  TrialRecord record;
  MetricsLogReplay replay;
  const auto peak = peak_heap_bytes_during([&] { replay = apply_metrics_log(log, record, "repeated.log"); });
  CAPTURE(log.size(), peak);
  CHECK(replay.valid_bytes == log.size());
  CHECK(replay.records > increasing + 10000);  // thousands of rows each replacing the one before
  REQUIRE(record.training.rows() == increasing);  // each repeat replaced the last row
  CHECK(record.training.cell_count() == increasing);
  CHECK(record.training.last("loss") > 10000);  // the last repeat's value
  CHECK(peak <= budget(log.size()));

  // The drop point of a row at the last step, over all of these rows: at most log2(rows) + 1
  // steps looked at (the scan this replaces looked at all of them, for every repeat).
  CountedSteps counted{&record.training.steps()};
  CHECK(first_step_at_or_after(counted, static_cast<std::int64_t>(increasing)) == increasing - 1);
  CHECK(counted.looked_at <= 16);
  counted.looked_at = 0;
  CHECK(first_step_at_or_after(counted, 1) == 0);
  CHECK(first_step_at_or_after(counted, static_cast<std::int64_t>(increasing) + 1) == increasing);
  CHECK(counted.looked_at <= 32);
}

TEST_CASE("load_trial_record with a crafted log beside trial.h5 stays within the budget",
          "[unit][metrics_log][bounds]") {
  dlx::checkpoint::testing::ScratchDir dir;
  const auto path = dir.path() / kTrialFileName;
  const auto record = dlx::checkpoint::testing::sample_record();
  save_trial_record(record, path);  // names generation 1
  // All the names a table may hold, with those trial.h5 has.
  const auto log = dlx::record::testing::names_then_empty_rows(kMaxMetricNames - record.training.names().size(), std::size_t{1} << 20);
  dlx::checkpoint::testing::write_bytes(dir.path() / "metrics.1.log", std::string(reinterpret_cast<const char*>(log.data()), log.size()));
  const auto input = std::filesystem::file_size(path) + log.size();
  TrialRecord loaded;
  // Counted: the log's reading and replay, and the record's tables (libhdf5's own mallocs are
  // bounded by the file's size: h5/read_guard.hpp).
  const auto peak = peak_heap_bytes_during([&] { loaded = load_trial_record(path); });
  CAPTURE(input, peak);
  CHECK(loaded.training.rows() > 30000);
  CHECK(peak <= budget(input) + log.size());  // the log's bytes are read whole, then applied
}
