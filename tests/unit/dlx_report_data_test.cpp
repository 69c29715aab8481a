// SPDX-License-Identifier: Apache-2.0
// dlx report's pure parts: the curve downsampling, hyperparameter importance and the inlined
// JSON (tools/dlx/report/).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "report_downsample.hpp"
#include "report_importance.hpp"
#include "report_page.hpp"
#include "report_story.hpp"

using namespace dlx::cli::report;

namespace {
std::vector<std::int64_t> steps_upto(std::int64_t n) {
  std::vector<std::int64_t> steps;
  for (std::int64_t s = 1; s <= n; ++s) steps.push_back(s);
  return steps;
}
}  // namespace

TEST_CASE("downsampling keeps at most the budget, the ends and every extreme") {
  const auto steps = steps_upto(10000);
  std::vector<double> values(steps.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::sin(static_cast<double>(i) / 50.0);
  values[4321] = 50;   // a spike
  values[8765] = -50;  // a dip
  const auto curve = downsample_min_max(steps, values, {}, 1000);
  CHECK(curve.steps.size() <= 1000);
  CHECK(curve.steps.size() >= 900);
  CHECK(curve.steps.front() == 1);
  CHECK(curve.steps.back() == 10000);
  CHECK(std::is_sorted(curve.steps.begin(), curve.steps.end()));
  CHECK(std::find(curve.values.begin(), curve.values.end(), 50.0) != curve.values.end());
  CHECK(std::find(curve.values.begin(), curve.values.end(), -50.0) != curve.values.end());
  CHECK(curve.reported == 10000);
}

TEST_CASE("a short curve is kept whole") {
  const auto curve = downsample_min_max({1, 2, 3}, {0.5, 0.25, 0.125}, {}, 1000);
  CHECK(curve.steps == std::vector<std::int64_t>{1, 2, 3});
  CHECK(curve.values == std::vector<double>{0.5, 0.25, 0.125});
}

TEST_CASE("NaN rows are skipped, infinite values counted, neither drawn") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const auto curve = downsample_min_max({1, 2, 3, 4, 5}, {1, nan, inf, -inf, 2}, {}, 100);
  CHECK(curve.steps == std::vector<std::int64_t>{1, 5});
  CHECK(curve.infinite == 2);
  CHECK(curve.reported == 2);
  CHECK(downsample_min_max({1, 2}, {nan, nan}, {}, 100).steps.empty());
  CHECK(downsample_min_max({}, {}, {}, 100).steps.empty());
}

TEST_CASE("a cut breaks the curve with a gap, and each side keeps its ends") {
  const auto steps = steps_upto(1000);
  const std::vector<double> values(steps.size(), 1.0);
  const auto curve = downsample_min_max(steps, values, {400}, 100);
  const auto gap = std::find_if(curve.values.begin(), curve.values.end(), [](double v) { return std::isnan(v); });
  REQUIRE(gap != curve.values.end());
  const auto at = static_cast<std::size_t>(gap - curve.values.begin());
  CHECK(curve.steps[at - 1] == 400);
  CHECK(curve.steps[at + 1] == 401);
  CHECK(curve.steps[at] == 401);
  CHECK(std::count_if(curve.values.begin(), curve.values.end(), [](double v) { return std::isnan(v); }) == 1);
  // A cut outside the curve changes nothing.
  CHECK(downsample_min_max(steps, values, {5000}, 100).steps.size() == downsample_min_max(steps, values, {}, 100).steps.size());
}

TEST_CASE("importance: a hyperparameter that decides the result scores high, noise about 0") {
  std::mt19937 random(3);
  std::uniform_real_distribution<double> uniform(0, 1);
  ImportanceInput input;
  input.names = {"lr", "noise", "optimizer", "constant"};
  for (int t = 0; t < 60; ++t) {
    const double lr = std::pow(10.0, -4 + 3 * uniform(random));
    const std::string optimizer = t % 2 ? "adam" : "sgd";
    input.values.push_back({lr, uniform(random), optimizer, 7});
    input.results.push_back(std::abs(std::log10(lr) + 2.5) + 0.01 * uniform(random));
  }
  const auto scores = hyperparameter_importance(input);
  REQUIRE(scores.size() == 3);  // the constant explains nothing and is left out
  CHECK(scores[0].name == "lr");
  CHECK(scores[0].score > 0.5);
  for (std::size_t i = 1; i < scores.size(); ++i) CHECK(scores[i].score < 0.15);
}

TEST_CASE("importance: nothing below the minimum number of trials, and infinite results count as ranks") {
  ImportanceInput input;
  input.names = {"x"};
  for (std::size_t t = 0; t + 1 < kMinTrials; ++t) {
    input.values.push_back({static_cast<double>(t)});
    input.results.push_back(static_cast<double>(t));
  }
  CHECK(hyperparameter_importance(input).empty());
  input.values.push_back({100.0});
  input.results.push_back(std::numeric_limits<double>::infinity());
  const auto scores = hyperparameter_importance(input);
  REQUIRE(scores.size() == 1);
  CHECK(scores[0].score > 0.8);
}

TEST_CASE("inlined JSON cannot close the script element, and stays JSON") {
  nlohmann::json model{{"name", "</script><script>alert(1)</script><!--"}, {"bytes", std::string("\xff\xfe")}};
  const auto text = inline_json(model);
  CHECK(text.find('<') == std::string::npos);
  const auto back = nlohmann::json::parse(text);
  CHECK(back["name"] == "</script><script>alert(1)</script><!--");
  CHECK(back["bytes"] == "\xEF\xBF\xBD\xEF\xBF\xBD");  // not UTF-8: U+FFFD each
}

TEST_CASE("attempts: restarts split a trial's time, and so do the searcher's pauses") {
  dlx::record::TrialRecord record;
  record.state = "completed";
  record.created_unix = 1000;
  record.updated_unix = 2000;
  record.nodes = "n1,n2";
  record.restart_events.push_back({"time_limit", "requeue: checkpoint at step 40 after SIGUSR2", 1500, 40, 5, 12.5, 100, "n3,n4"});
  const auto attempts_json = attempts(record, {{30, 1200, 1300}, {90, 1900, std::nullopt}});
  REQUIRE(attempts_json.size() == 3);
  CHECK(attempts_json[0]["how"] == "paused");
  CHECK(attempts_json[0]["start"] == 1000.0);
  CHECK(attempts_json[0]["end"] == 1200.0);
  CHECK(attempts_json[1]["how"] == "time_limit");
  CHECK(attempts_json[1]["start"] == 1300.0);
  CHECK(attempts_json[1]["end"] == 1400.0);  // the restart came 100 s (its downtime) later
  CHECK(attempts_json[1]["reason"] == "requeue: checkpoint at step 40 after SIGUSR2");
  CHECK(attempts_json[1]["nodes"] == "n3,n4");  // the restart's previous_nodes: the attempt it ended
  CHECK(attempts_json[0]["nodes"] == "n3,n4");  // the same attempt, before the searcher's pause
  CHECK(attempts_json[2]["how"] == "completed");
  CHECK(attempts_json[2]["start"] == 1500.0);
  CHECK(attempts_json[2]["end"] == 2000.0);
  CHECK(attempts_json[2]["nodes"] == "n1,n2");
  CHECK(attempts_json[2]["resumed_step"] == 40);
  CHECK(attempts_json[2]["steps_lost"] == 5);
  CHECK(attempts_json[2]["seconds_lost"] == 12.5);
}

TEST_CASE("numbers for the page: 6 significant digits, non-finite ones as words") {
  CHECK(number(0.123456789) == 0.123457);
  CHECK(number(std::numeric_limits<double>::infinity()) == "inf");
  CHECK(number(-std::numeric_limits<double>::infinity()) == "-inf");
  CHECK(number(std::nan("")) == "nan");
}
