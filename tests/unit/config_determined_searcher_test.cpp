// SPDX-License-Identifier: Apache-2.0
// The `searcher` section forms of Determined 0.12-0.38: what is accepted (with Determined's
// meaning), what is refused (with what replaces it), and the did-you-means of the section. The
// expected values come from Determined's schemas (schemas/expconf/v0/searcher-*.json) and docs.
#include <catch2/catch.hpp>

#include <string>

#include "dlx/config/parse.hpp"

using dlx::config::ConfigError;
using dlx::config::Experiment;
using dlx::config::Length;
using dlx::config::parse_experiment;
using dlx::config::SearcherName;

namespace {

Experiment parse_searcher(const std::string& searcher, const std::string& hyperparameters = "") {
  return parse_experiment("name: d\nentrypoint: x\nsearcher: " + searcher + "\n" +
                              (hyperparameters.empty() ? "" : "hyperparameters:\n" + hyperparameters),
                          "det.yaml");
}

std::string error_of(const std::string& searcher) {
  try {
    parse_searcher(searcher);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("Determined: max_length as a bare integer is batches", "[config][determined]") {
  auto e = parse_searcher("{name: adaptive_asha, metric: loss, max_trials: 16, max_length: 1000}");
  REQUIRE(e.searcher.max_length);
  CHECK(e.searcher.max_length->unit == Length::Unit::batches);
  CHECK(e.searcher.max_length->value == 1000);
  auto single = parse_searcher("{name: single, metric: loss, max_length: 50}");
  CHECK(single.searcher.max_length->value == 50);
  CHECK_THAT(error_of("{name: single, metric: loss, max_length: 0}"),
             Catch::Contains("searcher.max_length: must be between 1 and"));
  auto epochs = parse_searcher("{name: single, metric: loss, max_length: {epochs: 3}}");
  CHECK(epochs.searcher.max_length->unit == Length::Unit::epochs);
}

TEST_CASE("Determined: divisor is any number > 1", "[config][determined]") {
  CHECK(parse_searcher("{name: async_halving, metric: l, max_trials: 9, max_length: 90, divisor: 3.0}")
            .searcher.asha.divisor == 3.0);
  CHECK(parse_searcher("{name: adaptive_asha, metric: l, max_trials: 9, max_length: 90, divisor: 2.5}")
            .searcher.asha.divisor == 2.5);
  CHECK_THAT(error_of("{name: async_halving, metric: l, max_trials: 9, max_length: 90, divisor: 1}"),
             Catch::Contains("searcher.divisor: must be a number > 1, got 1 (keep 1/divisor"));
  CHECK_THAT(error_of("{name: async_halving, metric: l, max_trials: 9, max_length: 90, divisor: 0.5}"),
             Catch::Contains("must be a number > 1, got 0.5"));
}

TEST_CASE("Determined: async_halving's num_rungs, adaptive_asha's max_rungs and bracket_rungs", "[config][determined]") {
  auto async = parse_searcher("{name: async_halving, metric: l, max_trials: 9, max_length: 90, num_rungs: 3}");
  CHECK(async.searcher.asha.max_rungs == 3);
  CHECK_THAT(error_of("{name: async_halving, metric: l, max_trials: 9, max_length: 90, num_rungs: 3, max_rungs: 3}"),
             Catch::Contains("searcher.num_rungs: is given together with max_rungs"));
  // num_rungs under adaptive_asha: its name there is max_rungs (not PBT's num_rounds).
  CHECK_THAT(error_of("{name: adaptive_asha, metric: l, max_trials: 9, max_length: 90, num_rungs: 3}"),
             Catch::Contains("searcher.num_rungs: is not an option of the adaptive_asha searcher (write max_rungs: N)"));
  auto brackets =
      parse_searcher("{name: adaptive_asha, metric: l, max_trials: 9, max_length: 90, bracket_rungs: [2, 4, 3]}");
  CHECK(brackets.searcher.asha.bracket_rungs == std::vector<int>{2, 4, 3});
  CHECK_THAT(error_of("{name: adaptive_asha, metric: l, max_trials: 9, max_length: 90, bracket_rungs: [2, 0]}"),
             Catch::Contains("searcher.bracket_rungs: each bracket's rung count must be an integer between 1 and 100, "
                             "got '0'"));
  CHECK_THAT(error_of("{name: adaptive_asha, metric: l, max_trials: 9, max_length: 90, bracket_rungs: 3}"),
             Catch::Contains("searcher.bracket_rungs: expected a list of rung counts"));
  CHECK_THAT(error_of("{name: async_halving, metric: l, max_trials: 9, max_length: 90, bracket_rungs: [3]}"),
             Catch::Contains("searcher.bracket_rungs: is not an option of the async_halving searcher (it belongs to "
                             "adaptive_asha; remove it)"));
}

TEST_CASE("Determined: source_trial_id and source_checkpoint_uuid are accepted and reported as ignored",
          "[config][determined]") {
  auto e = parse_searcher("{name: single, metric: l, source_trial_id: 12, source_checkpoint_uuid: 7f3a-11}");
  REQUIRE(e.searcher.ignored.size() == 2);
  CHECK(e.searcher.ignored[0] ==
        "searcher.source_trial_id (dlx trials start from scratch: load those weights in your trainer)");
  CHECK(e.searcher.ignored[1] ==
        "searcher.source_checkpoint_uuid (dlx trials start from scratch: load those weights in your trainer)");
  CHECK(parse_searcher("{name: single, metric: l}").searcher.ignored.empty());
}

TEST_CASE("Determined 0.38: time_metric and max_time", "[config][determined]") {
  auto e = parse_searcher("{name: adaptive_asha, metric: l, max_trials: 16, time_metric: epochs, max_time: 12}");
  REQUIRE(e.searcher.max_length);
  CHECK(e.searcher.max_length->unit == Length::Unit::epochs);
  CHECK(e.searcher.max_length->value == 12);
  CHECK_THAT(error_of("{name: adaptive_asha, metric: l, max_trials: 16, time_metric: batches}"),
             Catch::Contains("searcher.time_metric: needs both time_metric and max_time"));
  CHECK_THAT(error_of("{name: adaptive_asha, metric: l, max_trials: 16, time_metric: steps, max_time: 9}"),
             Catch::Contains("searcher.time_metric: unknown value 'steps'"));
  CHECK_THAT(error_of("{name: adaptive_asha, metric: l, max_trials: 16, time_metric: batches, max_time: 9, "
                      "max_length: 9}"),
             Catch::Contains("searcher.max_length: is given together with time_metric and max_time"));
  // Not a typo of `metric`: an option of the ASHA methods only.
  CHECK_THAT(error_of("{name: random, metric: l, max_trials: 4, time_metric: batches, max_time: 9}"),
             Catch::Contains("searcher.time_metric: is not an option of the random searcher (it belongs to "
                             "async_halving and adaptive_asha; remove it)"));
}

TEST_CASE("Determined: max_concurrent_trials defaults to 16, and PBT's to its population",
          "[config][determined]") {
  CHECK(parse_searcher("{name: random, metric: l, max_trials: 100}").searcher.max_concurrent_trials == 16);
  CHECK(parse_searcher("{name: grid, metric: l}").searcher.max_concurrent_trials == 16);
  CHECK(parse_searcher("{name: adaptive_asha, metric: l, max_trials: 9, max_length: 9}").searcher.max_concurrent_trials ==
        16);
  CHECK(parse_searcher("{name: pbt, metric: l, population_size: 24, num_rounds: 2, length_per_round: 5}")
            .searcher.max_concurrent_trials == 24);
  CHECK(parse_searcher("{name: random, metric: l, max_trials: 100, max_concurrent_trials: 0}")
            .searcher.max_concurrent_trials == 0);
  // More than max_trials is no error (Determined takes the smaller).
  CHECK(parse_searcher("{name: random, metric: l, max_trials: 2, max_concurrent_trials: 3}")
            .searcher.max_concurrent_trials == 3);
}

TEST_CASE("Determined: single with ranged hyperparameters", "[config][determined]") {
  auto e = parse_searcher("{name: single, metric: l}", "  lr: {type: log, minval: -4, maxval: -1}\n");
  CHECK(e.searcher.name == SearcherName::single);
}

TEST_CASE("Determined: retired searchers and pre-0.13 keys are refused with their replacement", "[config][determined]") {
  struct Row {
    std::string searcher, message;
  };
  auto row = GENERATE(values<Row>({
      {"{name: custom, metric: l}",
       "det.yaml:3:18: searcher.name: 'custom' is Determined's searcher driven by your own Python search code, which "
       "dlx has no API for (use one of single, grid, random, async_halving, adaptive_asha (with sampler: tpe for a "
       "model-based search) or pbt)"},
      {"{name: adaptive_simple, metric: l, max_trials: 8, max_steps: 10}",
       "searcher.name: 'adaptive_simple' was retired by Determined (use name: adaptive_asha with the same max_trials, "
       "mode, max_rungs and divisor, and max_length in place of max_steps)"},
      {"{name: adaptive, metric: l, budget: {batches: 100}}",
       "searcher.name: 'adaptive' was retired by Determined (use name: adaptive_asha with max_trials: N in place of "
       "budget (same mode, max_rungs, divisor, bracket_rungs))"},
      {"{name: sync_halving, metric: l}",
       "searcher.name: 'sync_halving' was retired by Determined (use name: async_halving with num_rungs, divisor, "
       "max_length and max_trials: N in place of budget)"},
      {"{name: single, metric: l, max_steps: 10}",
       "searcher.max_steps: is a pre-0.13 Determined key (training was counted in steps) (write max_length: "
       "{batches: 1000} (10 steps x 100 batches per step; with another batches_per_step, multiply by it))"},
      {"{name: async_halving, metric: l, max_trials: 4, target_trial_steps: 7}",
       "searcher.target_trial_steps: is a pre-0.13 Determined key (training was counted in steps) (write max_length: "
       "{batches: 700}"},
      {"{name: pbt, metric: l, population_size: 4, num_rounds: 2, steps_per_round: 3}",
       "searcher.steps_per_round: is a pre-0.13 Determined key (training was counted in steps) (write "
       "length_per_round: {batches: 300}"},
      {"{name: single, metric: l, step_budget: 100}",
       "searcher.step_budget: was a total training budget of Determined's retired adaptive searchers (remove it: "
       "max_trials and max_length bound the search)"},
      {"{name: single, metric: l, train_stragglers: true}",
       "searcher.train_stragglers: was an option of Determined's retired sync_halving and adaptive searchers "
       "(remove it)"},
  }));
  CHECK_THAT(error_of(row.searcher), Catch::Contains(row.message));
}

TEST_CASE("Determined: unknown searcher keys suggest only keys of the searcher section", "[config][determined]") {
  // `num_rungs` under async_halving used to suggest PBT's num_rounds; now it is a key of its own.
  CHECK(error_of("{name: async_halving, metric: l, max_trials: 9, max_length: 9, num_rungs: 2}").empty());
  CHECK_THAT(error_of("{name: random, metric: l, max_trials: 4, max_trails: 5}"),
             Catch::Contains("searcher.max_trails: unknown key in searcher (did you mean 'max_trials'?)"));
  // A key of another method is named as such, not "corrected" to a key of this one.
  CHECK_THAT(error_of("{name: grid, metric: l, num_rounds: 3}"),
             Catch::Contains("searcher.num_rounds: is not an option of the grid searcher (it belongs to pbt"));
  // Far from every key: the list of this method's keys.
  CHECK_THAT(error_of("{name: single, metric: l, slots_per_trial: 2}"),
             Catch::Contains("searcher.slots_per_trial: unknown key in searcher (known keys for single: name, metric"));
}
