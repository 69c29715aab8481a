// SPDX-License-Identifier: Apache-2.0
// single, grid and random as Methods; make_method, ticket_count and the JSON forms of Work and
// Decision that the journal records.
#include <catch2/catch.hpp>

#include "dlx/config/parse.hpp"
#include "dlx/searcher/method.hpp"
#include "dlx/searcher/trial_plan.hpp"
#include "simulated_runner.hpp"

using namespace dlx;
using searcher::Decision;
using searcher::Work;

namespace {

config::Experiment parse(const std::string& searcher, const std::string& hyperparameters) {
  return config::parse_experiment("name: t\nentrypoint: x\nseed: 42\nsearcher: " + searcher +
                                      "\nhyperparameters:\n" + hyperparameters,
                                  "t.yaml");
}

const std::string kSpace =
    "  x: {type: double, minval: 0, maxval: 1, count: 3}\n"
    "  y: {type: double, minval: 0, maxval: 1, count: 2}\n";

}  // namespace

TEST_CASE("grid: ticket t trains grid point t to max_length, then completes", "[searcher][method][grid]") {
  auto experiment = parse("{name: grid, metric: loss, max_length: {batches: 50}}", kSpace);
  auto method = searcher::make_method(experiment);
  REQUIRE(searcher::ticket_count(experiment) == 6);
  for (int ticket = 0; ticket < 6; ++ticket) {
    Work work = method->on_work_requested(ticket);
    CHECK(work.kind == Work::Kind::train);
    CHECK(work.trial == ticket);
    CHECK(work.start_length == 0);
    CHECK_FALSE(work.checkpoint_trial);
    CHECK(work.target_length == 50);
    CHECK(work.hparams == searcher::plan_trial(experiment, ticket).hparams);
  }
  CHECK(method->on_work_requested(6).kind == Work::Kind::none);

  Decision early = method->on_validation(2, 20, 0.5);
  CHECK(early.kind == Decision::Kind::continue_training);
  CHECK(early.target_length == 50);
  CHECK(method->on_validation(2, 50, 0.4).kind == Decision::Kind::complete);
  CHECK_THROWS_AS(method->on_validation(9, 50, 0.4), dlx::Error);
}

TEST_CASE("single without max_length: the trainer's own length, complete at its report", "[searcher][method]") {
  auto experiment = parse("{name: single, metric: loss}", "  lr: 0.1\n");
  auto method = searcher::make_method(experiment);
  Work work = method->on_work_requested(0);
  CHECK(work.kind == Work::Kind::train);
  CHECK(work.target_length == 0);
  CHECK(work.hparams.dump() == R"({"lr":0.1})");
  CHECK(method->on_validation(0, 1234, 0.1).kind == Decision::Kind::complete);
  CHECK(method->on_work_requested(1).kind == Work::Kind::none);
}

TEST_CASE("random: the sampler's points, the same answer for a ticket that asks again", "[searcher][method][random]") {
  auto experiment = parse("{name: random, metric: loss, max_trials: 5, max_length: {epochs: 3}}",
                          "  x: {type: double, minval: 0, maxval: 1}\n");
  auto method = searcher::make_method(experiment);
  Work first = method->on_work_requested(3);
  CHECK(first.hparams == searcher::plan_trial(experiment, 3).hparams);
  auto before = method->snapshot();
  Work again = method->on_work_requested(3);
  CHECK(searcher::to_json(again) == searcher::to_json(first));
  CHECK(method->snapshot() == before);

  auto restored = searcher::make_method(experiment);
  restored->restore(method->snapshot());
  CHECK(searcher::to_json(restored->on_work_requested(3)) == searcher::to_json(first));
  CHECK(restored->snapshot() == method->snapshot());
}

TEST_CASE("random in simulation: every trial runs once to max_length", "[searcher][method][random]") {
  auto experiment = parse("{name: random, metric: loss, max_trials: 20, max_length: {batches: 30}}",
                          "  x: {type: double, minval: 0, maxval: 1}\n  y: {type: double, minval: 0, maxval: 1}\n");
  auto method = searcher::make_method(experiment);
  simulation::SimulationOptions options;
  options.workers = 4;
  options.tickets = searcher::ticket_count(experiment);
  options.curve = simulation::synthetic_curve(7, 0.1, 30);
  auto result = simulation::simulate(*method, options);
  CHECK(result.violations.empty());
  CHECK(result.trials.size() == 20);
  CHECK(result.ended("completed") == 20);
  CHECK(result.reached(30) == 20);
  CHECK(result.tickets_with_work == 20);
  CHECK_FALSE(result.work_left);
  CHECK(result.makespan == Approx(5 * 30.0));  // 20 trials of 30 units on 4 workers
  CHECK(result.busy_fraction() == Approx(1.0));
}

TEST_CASE("make_method and ticket_count for every searcher", "[searcher][method]") {
  const std::string space = "  x: {type: double, minval: 0, maxval: 1}\n";
  CHECK(searcher::make_method(parse("{name: random, metric: m, max_trials: 3}", space)) != nullptr);
  auto asha = parse("{name: async_halving, metric: m, max_trials: 16, max_length: {batches: 64}, divisor: 4, max_rungs: 3}",
                    space);
  CHECK(searcher::make_method(asha) != nullptr);
  // 16 new trials + (3 rungs - 1) x max(1, 16 / 4) resumed promotions (asha.cpp explains why).
  CHECK(searcher::ticket_count(asha) == 16 + 2 * 4);
  auto stopping = parse(
      "{name: async_halving, metric: m, max_trials: 16, max_length: {batches: 64}, divisor: 4, max_rungs: 3, "
      "stop_once: true}",
      space);
  CHECK(searcher::ticket_count(stopping) == 16);
  auto adaptive = parse("{name: adaptive_asha, metric: m, max_trials: 16, max_length: {batches: 64}}", space);
  CHECK(searcher::make_method(adaptive) != nullptr);
  CHECK(searcher::ticket_count(adaptive) > 16);
}

TEST_CASE("Work and Decision JSON: snake_case kinds, exact round trip, file order kept", "[searcher][method][json]") {
  Work work;
  work.kind = Work::Kind::train;
  work.trial = 7;
  work.hparams = nlohmann::ordered_json::parse(R"({"zeta": 1, "alpha": [1, "a"], "optim.lr": 0.1})");
  work.start_length = 27;
  work.checkpoint_trial = 7;
  work.target_length = 81;
  work.reason = "resume trial 7";
  auto json = searcher::to_json(work);
  CHECK(json.at("kind") == "train");
  CHECK(json.at("checkpoint_trial") == 7);
  CHECK(json.at("hparams").dump() == R"([["zeta",1],["alpha",[1,"a"]],["optim.lr",0.1]])");
  Work back = searcher::work_from_json(json);
  CHECK(back.hparams.dump() == work.hparams.dump());
  CHECK(searcher::to_json(back) == json);
  CHECK(back.checkpoint_trial == 7);

  Work wait{.kind = Work::Kind::wait, .trial = -1, .hparams = {}, .start_length = 0, .checkpoint_trial = {},
            .target_length = 0, .reason = "later", .ranking = {}};
  auto wait_json = searcher::to_json(wait);
  CHECK(wait_json.at("kind") == "wait");
  CHECK(wait_json.at("checkpoint_trial").is_null());
  CHECK(searcher::work_from_json(wait_json).hparams.is_null());
  CHECK(searcher::to_json(searcher::work_from_json(wait_json)) == wait_json);

  for (auto kind : {Decision::Kind::continue_training, Decision::Kind::stop, Decision::Kind::pause,
                    Decision::Kind::complete}) {
    Decision decision{.kind = kind, .target_length = 9, .reason = "why", .ranking = {}};
    auto decision_json = searcher::to_json(decision);
    CHECK(decision_json.at("kind") == searcher::to_string(kind));
    CHECK_FALSE(decision_json.contains("ranking"));  // none: the event keeps its earlier form
    Decision round = searcher::decision_from_json(decision_json);
    CHECK(round.kind == kind);
    CHECK(searcher::to_json(round) == decision_json);
  }
  // A ranking (rung 1: 2nd of 5 results, the top 1 goes on) survives the round trip.
  Decision ranked{.kind = Decision::Kind::pause, .target_length = 0, .reason = "rung 1",
                  .ranking = searcher::Ranking{.rung = 1, .rank = 2, .peers = 5, .keep = 1}};
  const auto ranked_json = searcher::to_json(ranked);
  CHECK(ranked_json.at("ranking") == nlohmann::json{{"rung", 1}, {"rank", 2}, {"peers", 5}, {"keep", 1}});
  CHECK(searcher::decision_from_json(ranked_json).ranking == ranked.ranking);
  CHECK_THROWS_WITH(searcher::decision_from_json({{"kind", "stop"}, {"target_length", 0}, {"reason", ""},
                                                  {"ranking", {{"rung", 1}}}}),
                    Catch::Contains("field \"rank\""));
  CHECK(std::string(searcher::to_string(Decision::Kind::continue_training)) == "continue_training");
  CHECK_THROWS_WITH(searcher::decision_from_json({{"kind", "explode"}, {"target_length", 0}, {"reason", ""}}),
                    Catch::Contains("unknown decision kind \"explode\""));
  CHECK_THROWS_AS(searcher::work_from_json({{"kind", "train"}}), dlx::Error);
}
