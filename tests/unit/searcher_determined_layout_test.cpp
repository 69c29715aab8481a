// SPDX-License-Identifier: Apache-2.0
// Determined's numbers, computed by hand here (never by calling dlx's code for the expectation):
// grid midpoints and int rounding (master/pkg/searcher/grid.go), adaptive_asha's brackets
// (adaptive_asha.go: makeBrackets, getBracketMaxTrials), rung lengths with real divisors
// (asha_stopping.go: makeRungs, numContinue), PBT's replacement counts and trial numbering
// (pbt.go before its removal), and the default max_concurrent_trials of 16 (the expconf schemas).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "asha/asha_layout.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/searcher/asha_rungs.hpp"
#include "dlx/searcher/method.hpp"
#include "dlx/searcher/trial_plan.hpp"
#include "pbt/pbt_round.hpp"

using namespace dlx;

namespace {

config::Experiment parse(const std::string& searcher, const std::string& hyperparameters = "  x: 1\n") {
  return config::parse_experiment("name: d\nentrypoint: x\nseed: 3\nsearcher: " + searcher +
                                      "\nhyperparameters:\n" + hyperparameters,
                                  "det.yaml");
}

struct Bracket {
  int trials;
  std::vector<std::int64_t> lengths;
};

void check_brackets(const config::Experiment& experiment, const std::vector<Bracket>& expected) {
  const auto brackets = searcher::detail::asha_brackets(experiment);
  REQUIRE(brackets.size() == expected.size());
  for (std::size_t b = 0; b < brackets.size(); ++b) {
    INFO("bracket " << b);
    CHECK(brackets[b].trials == expected[b].trials);
    std::vector<std::int64_t> lengths;
    for (const auto& rung : brackets[b].rungs) lengths.push_back(rung.length);
    CHECK(lengths == expected[b].lengths);
  }
}

std::string adaptive(int max_trials, int max_length, const std::string& more) {
  return fmt::format("{{name: adaptive_asha, metric: l, max_trials: {}, max_length: {}{}}}", max_trials, max_length,
                     more);
}

}  // namespace

TEST_CASE("grid: count 1 is the midpoint, and int axes round half away from zero", "[searcher][determined][grid]") {
  // double: (1 + 4) / 2 = 2.5. int: round((1 + 4) / 2.0) = round(2.5) = 3; round((-4 + -1) / 2.0) =
  // round(-2.5) = -3 (Go's math.Round, half away from zero). log: 10^((-4 + -2) / 2) = 10^-3.
  auto e = parse("{name: grid, metric: l}",
                 "  d: {type: double, minval: 1, maxval: 4, count: 1}\n"
                 "  i: {type: int, minval: 1, maxval: 4, count: 1}\n"
                 "  n: {type: int, minval: -4, maxval: -1, count: 1}\n"
                 "  g: {type: log, minval: -4, maxval: -2, base: 10, count: 1}\n");
  auto trials = searcher::plan_all_trials(e);
  REQUIRE(trials.size() == 1);
  CHECK(trials[0].hparams["d"].get<double>() == 2.5);
  CHECK(trials[0].hparams["i"].get<std::int64_t>() == 3);
  CHECK(trials[0].hparams["n"].get<std::int64_t>() == -3);
  CHECK(trials[0].hparams["g"].get<double>() == Approx(0.001));
}

TEST_CASE("grid: int axes as Determined spaces and rounds them", "[searcher][determined][grid]") {
  struct Row {
    std::string axis;
    std::vector<std::int64_t> values;
  };
  auto row = GENERATE(values<Row>({
      // round(0 + i x 3 / 2) for i = 0, 1, 2: 0, round(1.5) = 2, 3
      {"{type: int, minval: 0, maxval: 3, count: 3}", {0, 2, 3}},
      // round(i x 10 / 3): 0, round(3.33) = 3, round(6.67) = 7, 10
      {"{type: int, minval: 0, maxval: 10, count: 4}", {0, 3, 7, 10}},
      // count clamped to maxval - minval + 1 = 4: every integer once
      {"{type: int, minval: 1, maxval: 4, count: 10}", {1, 2, 3, 4}},
      // -3 + i x 5 / 2: -3, round(-0.5) = -1 (away from zero), 2
      {"{type: int, minval: -3, maxval: 2, count: 3}", {-3, -1, 2}},
  }));
  auto trials = searcher::plan_all_trials(parse("{name: grid, metric: l}", "  i: " + row.axis + "\n"));
  std::vector<std::int64_t> got;
  for (const auto& trial : trials) got.push_back(trial.hparams["i"].get<std::int64_t>());
  CHECK(got == row.values);
}

TEST_CASE("single samples one point of ranged hyperparameters, from the seed", "[searcher][determined]") {
  auto e = parse("{name: single, metric: l}", "  lr: {type: double, minval: 0.1, maxval: 0.2}\n  k: 5\n");
  REQUIRE(searcher::trial_count(e) == 1);
  const auto once = searcher::plan_trial(e, 0).hparams;
  CHECK(once["lr"].get<double>() >= 0.1);
  CHECK(once["lr"].get<double>() <= 0.2);
  CHECK(once["k"] == 5);
  CHECK(searcher::plan_trial(e, 0).hparams == once);  // the same every time (a pure function of the seed)
  auto method = searcher::make_method(e);
  CHECK(method->on_work_requested(0).hparams == once);
}

TEST_CASE("adaptive_asha: Determined's brackets by mode", "[searcher][determined][adaptive_asha]") {
  // max_trials 16, max_length 937, divisor 4, max_rungs 5:
  //   R = min(5, int(ln 937 / ln 4) + 1 = int(4.94) + 1 = 5, int(ln 16 / ln 4) + 1 = 2 + 1 = 3) = 3
  //   rung lengths of a 3-rung bracket: 937 / 16 = 58.56 -> 58, 937 / 4 = 234.25 -> 234, 937
  SECTION("standard: rung counts {3, 2}") {
    // weights 4^2/3 = 5.333 and 4^1/2 = 2, total 7.333: int(5.333/7.333 x 16) = int(11.64) = 11,
    // int(2/7.333 x 16) = int(4.36) = 4; remainder 16 - 15 = 1 to the first: 12 and 4.
    check_brackets(parse(adaptive(16, 937, ", mode: standard")), {{12, {58, 234, 937}}, {4, {234, 937}}});
  }
  SECTION("aggressive: {3}") {
    check_brackets(parse(adaptive(16, 937, ", mode: aggressive")), {{16, {58, 234, 937}}});
  }
  SECTION("conservative: {3, 2, 1}") {
    // weights 5.333, 2, 1 (total 8.333): int(10.24) = 10, int(3.84) = 3, int(1.92) = 1; remainder 2
    // to the first: 12, 3, 1.
    check_brackets(parse(adaptive(16, 937, ", mode: conservative")),
                   {{12, {58, 234, 937}}, {3, {234, 937}}, {1, {937}}});
  }
  SECTION("explicit bracket_rungs [2, 4], divisor 2, 20 trials, length 64") {
    // sorted most rungs first: {4, 2}; weights 2^3/4 = 2 and 2^1/2 = 1 (total 3): int(13.33) = 13,
    // int(6.67) = 6; remainder 1: 14 and 6. Lengths 64/8 = 8, 64/4 = 16, 64/2 = 32, 64; and 32, 64.
    check_brackets(parse(adaptive(20, 64, ", divisor: 2, bracket_rungs: [2, 4]")),
                   {{14, {8, 16, 32, 64}}, {6, {32, 64}}});
  }
  SECTION("more explicit brackets than trials: each still gets one, as in Determined") {
    // {3, 2, 1} with max_trials 2: weights 16/3, 2, 1 -> int(1.28) = 1, max(1, int(0.48)) = 1,
    // max(1, int(0.24)) = 1: three trials, one more than max_trials; remainder max(0, 2 - 3) = 0.
    auto e = parse(adaptive(2, 64, ", bracket_rungs: [1, 2, 3]"));
    check_brackets(e, {{1, {4, 16, 64}}, {1, {16, 64}}, {1, {64}}});
    CHECK(searcher::trial_count(e) == 3);
  }
  SECTION("ln(1000) / ln(10) is 2.9999999999999996 in doubles: 3 rungs, not 4") {
    // R = min(5, int(2.9999999999999996) + 1 = 3, int(ln 1000 / ln 10) + 1 = 3) = 3: 10, 100, 1000.
    check_brackets(parse(adaptive(1000, 1000, ", divisor: 10, mode: aggressive")), {{1000, {10, 100, 1000}}});
  }
  SECTION("divisor 2.5") {
    // R = min(5, int(ln 100 / ln 2.5) + 1 = int(5.03) + 1 = 6, int(ln 10 / ln 2.5) + 1 = int(2.51) + 1 = 3) = 3;
    // standard {3, 2}: weights 2.5^2/3 = 2.083 and 2.5/2 = 1.25 (total 3.333): int(6.25) = 6,
    // int(3.75) = 3; remainder 1: 7 and 3. Lengths 100 / 6.25 = 16, 100 / 2.5 = 40, 100.
    check_brackets(parse(adaptive(10, 100, ", divisor: 2.5")), {{7, {16, 40, 100}}, {3, {40, 100}}});
  }
}

TEST_CASE("async_halving: rungs and top-1/divisor with a real divisor", "[searcher][determined][asha]") {
  // num_rungs 3, divisor 2.5, max_length 100: 100 / 2.5^2 = 16, 100 / 2.5 = 40, 100. Expected
  // trials per rung: 10, int(10 / 2.5) = 4, int(4 / 2.5) = int(1.6) = 1.
  auto rungs = searcher::asha_rungs(10, 2.5, 3, 100);
  REQUIRE(rungs.size() == 3);
  CHECK(rungs[0].length == 16);
  CHECK(rungs[1].length == 40);
  CHECK(rungs[2].length == 100);
  CHECK(rungs[0].trials == 10);
  CHECK(rungs[1].trials == 4);
  CHECK(rungs[2].trials == 1);
  // numContinue = int(n / divisor): 5 / 2.5 = 2, 4 / 2.5 = 1.6 -> 1, 7 / 2.5 = 2.8 -> 2.
  CHECK(searcher::asha_keep(5, 2.5) == 2);
  CHECK(searcher::asha_keep(4, 2.5) == 1);
  CHECK(searcher::asha_keep(7, 2.5) == 2);
  auto e = parse("{name: async_halving, metric: l, max_trials: 10, max_length: 100, num_rungs: 3, divisor: 2.5}");
  check_brackets(e, {{10, {16, 40, 100}}});
}

TEST_CASE("pbt: Determined's replacement count and trial numbering", "[searcher][determined][pbt]") {
  struct Row {
    int population;
    double fraction;
    int replaced;
  };
  auto row = GENERATE(values<Row>({
      {10, 0.3, 3},   // 0.3 x 10 = 3.0 in doubles
      {4, 0.2, 0},    // 0.8 truncates to 0: nobody is replaced
      {8, 0.25, 2},   // 2
      {100, 0.29, 28},  // 0.29 x 100 = 28.999999999999996 in doubles: 28
  }));
  config::PbtOptions options;
  options.population_size = row.population;
  options.truncate_fraction = row.fraction;
  options.num_rounds = 3;
  CHECK(searcher::detail::pbt_truncate_count(options) == row.replaced);
  // Trials: P in round 0, n new in each of the 2 later rounds.
  CHECK(searcher::detail::pbt_trial_total(options) == row.population + 2 * row.replaced);
  CHECK(searcher::detail::pbt_first_new_trial(options, 2) == row.population + row.replaced);
}

TEST_CASE("pbt: trial count, tickets and the array", "[searcher][determined][pbt]") {
  // P = 8, 4 rounds, truncate 0.25: n = 2; trials 8 + 3 x 2 = 14; tickets 8 x 4 = 32; throttle
  // defaults to the population: 0-31%8.
  auto e = parse("{name: pbt, metric: l, population_size: 8, num_rounds: 4, length_per_round: 100, "
                 "replace_function: {truncate_fraction: 0.25}}",
                 "  x: {type: double, minval: 0, maxval: 1}\n");
  CHECK(searcher::trial_count(e) == 14);
  CHECK(searcher::ticket_count(e) == 32);
  CHECK(searcher::array_spec(e) == "0-31%8");
}

TEST_CASE("max_concurrent_trials: Determined's default 16, never above the array", "[searcher][determined]") {
  // random, 100 trials, omitted: %16.
  CHECK(searcher::array_spec(parse("{name: random, metric: l, max_trials: 100}")) == "0-99%16");
  // a grid of 4 points: 16 does not limit, no throttle.
  CHECK(searcher::array_spec(parse("{name: grid, metric: l}", "  c: {type: categorical, vals: [1, 2, 3, 4]}\n")) ==
        "0-3");
  // more than the trials (Determined takes the smaller): no throttle.
  CHECK(searcher::array_spec(parse("{name: random, metric: l, max_trials: 5, max_concurrent_trials: 9}")) == "0-4");
  // 0 is no limit, as in Determined.
  CHECK(searcher::array_spec(parse("{name: random, metric: l, max_trials: 100, max_concurrent_trials: 0}")) == "0-99");
  // adaptive_asha of the issue, promotion variant: 16 trials plus the resume bounds
  // (3 - 1) x max(1, int(12 / 4)) = 6 and (2 - 1) x max(1, int(4 / 4)) = 1: 23 tickets, %16.
  CHECK(searcher::array_spec(parse(adaptive(16, 937, ""))) == "0-22%16");
  // stop_once: one ticket per trial, 40 of them: %16.
  CHECK(searcher::array_spec(parse(adaptive(40, 937, ", stop_once: true"))) == "0-39%16");
}
