#include <cmath>
#include <limits>
#include <optional>

#include <catch2/catch.hpp>

#include "dlx/checkpoint/trial_record.hpp"

using dlx::checkpoint::MetricTable;

namespace {

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

}  // namespace

TEST_CASE("MetricTable::append pads every column to the number of steps", "[unit][metrics]") {
  auto table = table_with_gaps();
  REQUIRE(table.steps == std::vector<std::int64_t>{100, 200, 300, 400});
  REQUIRE(table.columns.size() == 2);
  const auto& loss = table.columns.at("loss");
  const auto& accuracy = table.columns.at("accuracy");
  REQUIRE(loss.size() == 4);
  REQUIRE(accuracy.size() == 4);
  CHECK(loss[0] == 3.0);
  CHECK(std::isnan(loss[1]));
  CHECK(loss[2] == 1.0);
  CHECK(std::isnan(loss[3]));
  CHECK(std::isnan(accuracy[0]));  // a column that appears later is padded at the front
  CHECK(accuracy[1] == 0.5);
  CHECK(accuracy[2] == 0.25);
  CHECK(std::isnan(accuracy[3]));
}

TEST_CASE("MetricTable::append repairs a column shorter than steps", "[unit][metrics]") {
  MetricTable table;
  table.steps = {1, 2};
  table.columns["loss"] = {0.5};
  table.append(3, {{"loss", 0.25}});
  const auto& loss = table.columns.at("loss");
  REQUIRE(loss.size() == 3);
  CHECK(loss[0] == 0.5);
  CHECK(std::isnan(loss[1]));
  CHECK(loss[2] == 0.25);
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
  table.append(1, {{"loss", std::numeric_limits<double>::quiet_NaN()}});
  table.append(2, {});
  CHECK(table.columns.at("loss").size() == 2);
  CHECK_FALSE(table.last("loss").has_value());
  CHECK_FALSE(table.best("loss", true).has_value());
}
