// SPDX-License-Identifier: Apache-2.0
#include <cmath>
#include <limits>
#include <optional>

#include <catch2/catch.hpp>

#include "dlx/record/trial_record.hpp"

using dlx::record::MetricTable;
using Catch::Matchers::Contains;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Rows of loss/accuracy with gaps: {100: loss 3}, {200: accuracy 0.5}, {300: loss 1, acc 0.25},
// {400: nothing}.
MetricTable table_with_gaps() {
  MetricTable table;
  table.append(100, {{"loss", 3.0}});
  table.append(200, {{"accuracy", 0.5}});
  table.append(300, {{"loss", 1.0}, {"accuracy", 0.25}});
  table.append(400, {});
  return table;
}

bool same(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

}  // namespace

TEST_CASE("MetricTable keeps each row's reported values and pads columns only when asked", "[unit][metrics]") {
  auto table = table_with_gaps();
  REQUIRE(table.steps() == std::vector<std::int64_t>{100, 200, 300, 400});
  CHECK(table.names() == std::vector<std::string>{"loss", "accuracy"});
  CHECK(table.cell_count() == 4);  // what was reported, not rows x names
  CHECK(table.cells(3).empty());
  // trial.h5's NaN-padded columns, a column that appears later padded at the front.
  CHECK(same(table.dense("loss"), {3.0, kNaN, 1.0, kNaN}));
  CHECK(same(table.dense("accuracy"), {kNaN, 0.5, 0.25, kNaN}));
  CHECK(same(table.dense("missing"), {kNaN, kNaN, kNaN, kNaN}));
  std::vector<std::string> visited;
  table.for_each_dense_column([&](const std::string& name, const std::vector<double>& column) {
    visited.push_back(name);
    CHECK(same(column, table.dense(name)));
  });
  CHECK(visited == std::vector<std::string>{"accuracy", "loss"});  // name order, as in trial.h5
}

TEST_CASE("MetricTable::series gives a metric's values with their steps and times", "[unit][metrics]") {
  MetricTable table;
  table.append(1, {{"loss", 2.0}}, 1000.0);
  table.append(2, {{"loss", kNaN}, {"acc", 0.5}}, 1001.0);
  table.append(3, {{"loss", 1.0}}, 1002.0);
  const auto loss = table.series("loss");
  CHECK(loss.steps == std::vector<std::int64_t>{1, 3});  // a NaN reads as not reported
  CHECK(loss.wall_times == std::vector<double>{1000.0, 1002.0});
  CHECK(loss.values == std::vector<double>{2.0, 1.0});
  const auto all = table.all_series();
  REQUIRE(all.size() == 2);
  CHECK(all.at("loss") == loss);
  CHECK(all.at("acc").steps == std::vector<std::int64_t>{2});
  CHECK(table.series("missing").values.empty());
}

TEST_CASE("MetricTable: a metric set twice in one row keeps the last value", "[unit][metrics]") {
  MetricTable table;
  const auto loss = table.add_name("loss");
  table.open_row(1);
  table.set(loss, 1.0);
  table.set(loss, 2.0);
  CHECK(table.cell_count() == 1);
  CHECK(table.last("loss") == 2.0);
  table.open_row(2);
  table.set(loss, 3.0);  // another row: another cell
  CHECK(table.cell_count() == 2);
}

TEST_CASE("MetricTable: a step at or before the last drops the rows it replaces", "[unit][metrics]") {
  auto table = table_with_gaps();
  table.append(200, {{"loss", 7.0}});  // a replay from step 200
  CHECK(table.steps() == std::vector<std::int64_t>{100, 200});
  CHECK(same(table.dense("loss"), {3.0, 7.0}));
  CHECK(same(table.dense("accuracy"), {kNaN, kNaN}));  // its values went with their rows
  CHECK(table.index_of("accuracy").has_value());      // the name stays
  table.drop_from(150);
  CHECK(table.steps() == std::vector<std::int64_t>{100});
  table.drop_from(1000);  // nothing at or after it
  CHECK(table.rows() == 1);
  table.clear_rows();
  CHECK(table.empty());
  CHECK(table.cell_count() == 0);
  CHECK(table.names().size() == 2);
}

TEST_CASE("MetricTable refuses a name past the limit and a value without a row", "[unit][metrics]") {
  MetricTable table;
  for (std::size_t i = 0; i < dlx::record::kMaxMetricNames; ++i) table.add_name("m" + std::to_string(i));
  CHECK(table.add_name("m7") == 7);  // a known name is not a new one
  CHECK_THROWS_WITH(table.add_name("one too many"), Contains("more than 4096 metric names in one table"));
  MetricTable empty;
  const auto loss = empty.add_name("loss");
  CHECK_THROWS_WITH(empty.set(loss, 1.0), Contains("before any row was opened"));
  empty.open_row(1);
  CHECK_THROWS_WITH(empty.set(loss + 1, 1.0), Contains("metric index 1 is not one of the table's 1 names"));
}

TEST_CASE("MetricTable::last skips trailing gaps", "[unit][metrics]") {
  auto metrics = table_with_gaps();
  auto [metric, expected] = GENERATE(table<std::string, std::optional<double>>({
      {"loss", 1.0},
      {"accuracy", 0.25},
      {"missing", std::nullopt},
  }));
  CAPTURE(metric);
  CHECK(metrics.last(metric) == expected);
}

TEST_CASE("MetricTable::best picks the minimum or maximum, ignoring gaps", "[unit][metrics]") {
  auto metrics = table_with_gaps();
  metrics.append(500, {{"loss", 2.0}, {"accuracy", 0.125}});
  auto [metric, smaller_is_better, expected] =
      GENERATE(table<std::string, bool, std::optional<double>>({
          {"loss", true, 1.0},
          {"loss", false, 3.0},
          {"accuracy", true, 0.125},
          {"accuracy", false, 0.5},
          {"missing", true, std::nullopt},
      }));
  CAPTURE(metric, smaller_is_better);
  CHECK(metrics.best(metric, smaller_is_better) == expected);
}

TEST_CASE("MetricTable: a column of only gaps has no last or best value", "[unit][metrics]") {
  MetricTable table;
  table.append(1, {{"loss", kNaN}});
  table.append(2, {});
  CHECK(table.dense("loss").size() == 2);
  CHECK_FALSE(table.last("loss").has_value());
  CHECK_FALSE(table.best("loss", true).has_value());
}

TEST_CASE("MetricTable equality: rows, times and reported values, NaN equal to NaN", "[unit][metrics]") {
  auto a = table_with_gaps(), b = table_with_gaps();
  CHECK(a == b);
  b.add_name("never reported");  // a dense file cannot tell it from no name
  CHECK(a == b);
  b.append(500, {{"loss", 1.0}});
  CHECK_FALSE(a == b);
  a.append(500, {{"loss", 1.0}}, 12.0);
  CHECK_FALSE(a == b);  // another wall time
}
