// SPDX-License-Identifier: Apache-2.0
// PBT as a Method: rounds of a population, wait until a round has finished, the bottom of the
// population replaced by copies of the top with explored hyperparameters (Determined's rule and
// trial numbering: a member that goes on keeps its trial id, a replacement is a new trial), failures
// replaced, deterministic, and a restored method answering like the original.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "dlx/common/error.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/searcher/method.hpp"
#include "dlx/searcher/references.hpp"
#include "dlx/searcher/trial_plan.hpp"
#include "simulated_runner.hpp"

using namespace dlx;
using searcher::Decision;
using searcher::ExitKind;
using searcher::Work;

namespace {

const char* kSpace =
    "  lr: {type: log, minval: -4, maxval: -1}\n"
    "  layers: {type: int, minval: 1, maxval: 8}\n"
    "  opt: {type: categorical, vals: [sgd, adam, lamb]}\n"
    "  epochs: 5\n";

config::Experiment pbt(int population, int rounds, const std::string& options = "", std::uint64_t seed = 17,
                       const std::string& hyperparameters = kSpace) {
  return config::parse_experiment("name: p\nentrypoint: x\nseed: " + std::to_string(seed) +
                                      "\nsearcher: {name: pbt, metric: loss, population_size: " +
                                      std::to_string(population) + ", num_rounds: " + std::to_string(rounds) +
                                      ", length_per_round: {batches: 100}" + options +
                                      "}\nhyperparameters:\n" + hyperparameters,
                                  "pbt.yaml");
}

// A synthetic loss: best at lr = 10^-2.5 and 4 layers, lower the longer a trial has trained.
double loss(const nlohmann::ordered_json& hparams, std::int64_t length) {
  double lr = std::log10(hparams["lr"].get<double>()) + 2.5;
  double layers = (hparams["layers"].get<int>() - 4) / 4.0;
  return lr * lr + layers * layers + 100.0 / static_cast<double>(length + 100);
}

// Trains every ticket of round `round` to its target and reports `losses[member]` (or the
// synthetic loss), asking a ticket of the next round in between, which must wait.
std::vector<Work> run_round(searcher::Method& method, const config::Experiment& e, int round,
                            const std::map<int, double>& losses = {}) {
  const int population = e.searcher.pbt.population_size;
  std::vector<Work> works;
  for (int member = 0; member < population; ++member) {
    works.push_back(method.on_work_requested(round * population + member));
    REQUIRE(works.back().kind == Work::Kind::train);
  }
  if (round + 1 < e.searcher.pbt.num_rounds) CHECK(method.on_work_requested((round + 1) * population).kind == Work::Kind::wait);
  for (int member = population - 1; member >= 0; --member) {
    const Work& work = works[static_cast<std::size_t>(member)];
    double metric = losses.count(member) ? losses.at(member) : loss(work.hparams, work.target_length);
    method.on_validation(work.trial, work.target_length, metric);
    method.on_trial_exited(work.trial, ExitKind::completed);
  }
  return works;
}

}  // namespace

TEST_CASE("pbt: population x rounds tickets, round 0 is the random points from scratch", "[searcher][pbt]") {
  auto e = pbt(4, 3);
  CHECK(searcher::ticket_count(e) == 12);
  auto method = searcher::make_method(e);
  for (int ticket = 0; ticket < 4; ++ticket) {
    Work work = method->on_work_requested(ticket);
    CHECK(work.kind == Work::Kind::train);
    CHECK(work.trial == ticket);
    CHECK(work.hparams == searcher::plan_trial(e, ticket).hparams);
    CHECK(work.start_length == 0);
    CHECK_FALSE(work.checkpoint_trial);
    CHECK(work.target_length == 100);
    CHECK(work.reason == "round 0: member " + std::to_string(ticket) + " starts trial " + std::to_string(ticket) +
                         " from a random point");
  }
  for (int ticket = 4; ticket < 12; ++ticket) CHECK(method->on_work_requested(ticket).kind == Work::Kind::wait);
  CHECK(method->on_work_requested(12).kind == Work::Kind::none);
}

TEST_CASE("pbt: a ticket waits until every trial of the round before has finished", "[searcher][pbt]") {
  auto e = pbt(4, 2);
  auto method = searcher::make_method(e);
  for (int trial = 0; trial < 3; ++trial) {
    method->on_work_requested(trial);
    // Paused, not complete: the member goes on from here in round 1 unless it is replaced.
    CHECK(method->on_validation(trial, 100, 0.5).kind == Decision::Kind::pause);
  }
  const auto before = method->snapshot();
  Work waiting = method->on_work_requested(5);
  CHECK(waiting.kind == Work::Kind::wait);
  CHECK(waiting.reason == "round 1 waits for round 0: 3 of 4 members have finished");
  CHECK(method->snapshot() == before);  // a wait changes nothing
  method->on_validation(3, 100, 0.7);
  Work work = method->on_work_requested(5);
  CHECK(work.kind == Work::Kind::train);
  CHECK(work.start_length == 100);
  CHECK(work.target_length == 200);
}

TEST_CASE("pbt: with a known metric table the bottom exploits the top", "[searcher][pbt]") {
  SECTION("population 4, truncate 0.25: int(0.25 x 4) = 1 replaced, by a copy of the best, as new trial 4") {
    auto e = pbt(4, 3, ", replace_function: {truncate_fraction: 0.25}");
    auto method = searcher::make_method(e);
    auto round0 = run_round(*method, e, 0, {{0, 0.5}, {1, 0.2}, {2, 0.9}, {3, 0.4}});
    std::vector<Work> round1;
    for (int ticket = 4; ticket < 8; ++ticket) round1.push_back(method->on_work_requested(ticket));

    const Work& exploit = round1[2];
    CHECK(exploit.trial == 4);  // the first new trial after round 0's 0..3
    CHECK(exploit.checkpoint_trial == 1);
    CHECK(exploit.start_length == 100);
    CHECK(exploit.target_length == 200);
    CHECK_THAT(exploit.reason, Catch::StartsWith("round 1: member 2 (trial 2, loss 0.9, 4th of 4) is replaced by trial 4, "
                                                 "a copy of trial 1 (loss 0.2, 1st) that perturbs lr x"));
    CHECK(exploit.hparams["opt"] == round0[1].hparams["opt"]);
    CHECK(exploit.hparams["epochs"] == 5);

    const std::map<int, std::string> reasons{
        {0, "round 1: member 0 (trial 0, loss 0.5, 3rd of 4) continues from its checkpoint at length 100"},
        {1, "round 1: member 1 (trial 1, loss 0.2, 1st of 4) continues from its checkpoint at length 100"},
        {3, "round 1: member 3 (trial 3, loss 0.4, 2nd of 4) continues from its checkpoint at length 100"}};
    for (const auto& [member, reason] : reasons) {
      const Work& work = round1[static_cast<std::size_t>(member)];
      CHECK(work.trial == member);  // the same trial goes on
      CHECK(work.checkpoint_trial == member);
      CHECK(work.hparams == round0[static_cast<std::size_t>(member)].hparams);
      CHECK(work.start_length == 100);
      CHECK(work.target_length == 200);
      CHECK(work.reason == reason);
    }
  }
  SECTION("population 8, truncate 0.25: the two worst are replaced by copies of the two best, best first") {
    auto e = pbt(8, 2, ", replace_function: {truncate_fraction: 0.25}");
    auto method = searcher::make_method(e);
    run_round(*method, e, 0, {{0, 0.8}, {1, 0.1}, {2, 0.7}, {3, 0.3}, {4, 0.6}, {5, 0.2}, {6, 0.5}, {7, 0.4}});
    for (int member = 0; member < 8; ++member) {
      Work work = method->on_work_requested(8 + member);
      INFO(work.reason);
      // Ranking 1 (0.1), 5 (0.2), 3, 7, 6, 4, 2 (0.7), 0 (0.8): members 0 and 2 are replaced; the
      // first replaced slot (member 0) gets new trial 8, a copy of the best (trial 1), member 2
      // gets trial 9, a copy of the second best (trial 5).
      if (member == 0 || member == 2) {
        CHECK(work.trial == (member == 0 ? 8 : 9));
        CHECK(work.checkpoint_trial == (member == 0 ? 1 : 5));
        CHECK_THAT(work.reason, Catch::Contains("is replaced by trial"));
      } else {
        CHECK(work.trial == member);
        CHECK(work.checkpoint_trial == member);
      }
    }
  }
  SECTION("larger is better: the highest metric is copied") {
    auto e = config::parse_experiment(
        "name: p\nentrypoint: x\nseed: 3\nsearcher: {name: pbt, metric: accuracy, smaller_is_better: false, "
        "population_size: 4, num_rounds: 2, length_per_round: {epochs: 1}, replace_function: {truncate_fraction: 0.25}}\n"
        "hyperparameters:\n" + std::string(kSpace),
        "pbt.yaml");
    auto method = searcher::make_method(e);
    run_round(*method, e, 0, {{0, 0.5}, {1, 0.2}, {2, 0.9}, {3, 0.4}});
    Work worst = method->on_work_requested(5);  // member 1, accuracy 0.2
    CHECK(worst.checkpoint_trial == 2);
    CHECK(worst.trial == 4);
    CHECK_THAT(worst.reason,
               Catch::Contains("(trial 1, accuracy 0.2, 4th of 4) is replaced by trial 4, a copy of trial 2 (accuracy 0.9, 1st)"));
  }
}

TEST_CASE("pbt: explore perturbs by 1 +/- perturb_factor within bounds, or resamples", "[searcher][pbt]") {
  SECTION("perturb only") {
    auto e = pbt(20, 6, ", replace_function: {truncate_fraction: 0.5}, "
                        "explore_function: {resample_probability: 0, perturb_factor: 0.25}");
    auto method = searcher::make_method(e);
    std::map<int, nlohmann::ordered_json> hparams;  // trial -> its hyperparameters
    int exploits = 0, clamped = 0;
    for (int round = 0; round < 6; ++round) {
      for (const Work& work : run_round(*method, e, round)) {
        hparams[work.trial] = work.hparams;
        if (round == 0 || work.checkpoint_trial == work.trial) continue;
        ++exploits;
        const auto& parent = hparams.at(*work.checkpoint_trial);
        INFO(work.reason);
        double ratio = work.hparams["lr"].get<double>() / parent["lr"].get<double>();
        double lr = work.hparams["lr"].get<double>();
        bool at_bound = std::abs(lr - 1e-4) < 1e-12 || std::abs(lr - 0.1) < 1e-12;
        CHECK((std::abs(ratio - 1.25) < 1e-9 || std::abs(ratio - 0.75) < 1e-9 || at_bound));
        clamped += at_bound;
        int layers = work.hparams["layers"].get<int>(), before = parent["layers"].get<int>();
        CHECK((layers == std::clamp(static_cast<int>(std::round(before * 1.25)), 1, 8) ||
               layers == std::clamp(static_cast<int>(std::round(before * 0.75)), 1, 8)));
        CHECK(work.hparams["opt"] == parent["opt"]);  // categorical: only ever resampled
        CHECK(work.hparams["epochs"] == 5);
      }
    }
    CHECK(exploits == 5 * 10);  // the bottom half of 20, in each of 5 later rounds
  }
  SECTION("resample_probability 1: every searched value is drawn afresh") {
    auto e = pbt(4, 2, ", replace_function: {truncate_fraction: 0.25}, "
                       "explore_function: {resample_probability: 1, perturb_factor: 0.2}");
    auto method = searcher::make_method(e);
    run_round(*method, e, 0, {{0, 0.5}, {1, 0.2}, {2, 0.9}, {3, 0.4}});
    Work work = method->on_work_requested(6);
    CHECK(work.trial == 4);
    CHECK(work.checkpoint_trial == 1);
    CHECK(work.hparams == searcher::plan_trial(e, 4).hparams);
    CHECK_THAT(work.reason, Catch::EndsWith("that resamples lr, resamples layers, resamples opt"));
  }
}

TEST_CASE("pbt: failed members are replaced by an exploit", "[searcher][pbt]") {
  auto e = pbt(4, 3, ", replace_function: {truncate_fraction: 0.25}");
  SECTION("one failure") {
    auto method = searcher::make_method(e);
    for (int trial = 0; trial < 4; ++trial) method->on_work_requested(trial);
    method->on_trial_exited(1, ExitKind::failed);
    CHECK(method->on_work_requested(1).kind == Work::Kind::none);  // its round is over for it
    const double losses[] = {0.5, 0, 0.9, 0.4};
    for (int trial : {0, 2, 3}) method->on_validation(trial, 100, losses[trial]);
    Work replaced = method->on_work_requested(5);
    CHECK(replaced.checkpoint_trial == 3);  // the best
    CHECK(replaced.trial == 4);
    CHECK_THAT(replaced.reason, Catch::StartsWith("round 1: member 1 (trial 1 has no result) is replaced by trial 4, a "
                                                  "copy of trial 3 (loss 0.4, 1st)"));
    // The failure fills the bottom n = 1: the worst member with a result continues.
    CHECK(method->on_work_requested(6).checkpoint_trial == 2);
    CHECK(method->on_work_requested(4).checkpoint_trial == 0);
    CHECK(method->on_work_requested(7).checkpoint_trial == 3);  // continues itself
  }
  SECTION("a diverged (NaN) result counts as none") {
    auto method = searcher::make_method(e);
    run_round(*method, e, 0, {{0, NAN}, {1, 0.2}, {2, 0.3}, {3, 0.4}});
    CHECK(method->on_work_requested(4).checkpoint_trial == 1);
    CHECK(method->on_work_requested(7).checkpoint_trial == 3);  // last with a result, but n = 1 is member 0
  }
  SECTION("nobody has a result: every member restarts from a random point") {
    auto method = searcher::make_method(e);
    for (int trial = 0; trial < 4; ++trial) {
      method->on_work_requested(trial);
      method->on_trial_exited(trial, ExitKind::failed);
    }
    for (int ticket = 4; ticket < 8; ++ticket) {
      Work work = method->on_work_requested(ticket);
      CHECK(work.kind == Work::Kind::train);
      CHECK_FALSE(work.checkpoint_trial);
      CHECK(work.start_length == 0);
      CHECK(work.target_length == 100);
      CHECK(work.trial == ticket);  // new trials 4..7, one per member
      if (ticket < searcher::trial_count(e)) CHECK(work.hparams == searcher::plan_trial(e, ticket).hparams);
      CHECK_THAT(work.reason, Catch::Contains("restarts as trial " + std::to_string(ticket) +
                                              " from a random point: no member of round 0 has a result"));
    }
  }
}

TEST_CASE("pbt: validations before the target continue, the last round completes, other tickets get none",
          "[searcher][pbt]") {
  auto e = pbt(2, 2);
  auto method = searcher::make_method(e);
  method->on_work_requested(0);
  Decision early = method->on_validation(0, 40, 0.9);
  CHECK(early.kind == Decision::Kind::continue_training);
  CHECK(early.target_length == 100);
  Decision done = method->on_validation(0, 100, 0.8);
  CHECK(done.kind == Decision::Kind::pause);
  CHECK(done.reason == "round 0: member 0 (trial 0) reached length 100 with loss 0.8; round 1 goes on from here or "
                       "replaces it");
  method->on_validation(1, 100, 0.7);
  Work last = method->on_work_requested(2);
  CHECK(last.trial == 0);  // int(0.2 x 2) = 0 replaced: trial 0 goes on
  Decision final_decision = method->on_validation(last.trial, last.target_length, 0.6);
  CHECK(final_decision.kind == Decision::Kind::complete);
  CHECK(final_decision.reason == "round 1 (the last): member 0 (trial 0) finished at length 200 with loss 0.6");
  CHECK(method->on_work_requested(2).kind == Work::Kind::none);
  CHECK(method->on_work_requested(4).kind == Work::Kind::none);
  CHECK_THROWS_AS(method->on_validation(9, 100, 0.1), dlx::Error);
}

namespace {

// Every answer of a whole PBT run as JSON; with `restore_after` >= 0, the method is replaced by a
// fresh one restored from its snapshot after that round.
std::vector<std::string> answers(const config::Experiment& e, int restore_after = -1) {
  auto method = searcher::make_method(e);
  std::vector<std::string> out;
  const int population = e.searcher.pbt.population_size;
  for (int round = 0; round < e.searcher.pbt.num_rounds; ++round) {
    std::vector<Work> works;
    for (int member = 0; member < population; ++member) {
      works.push_back(method->on_work_requested(round * population + member));
      out.push_back(searcher::to_json(works.back()).dump());
    }
    for (const Work& work : works) {
      if (work.trial % 5 == 3) {  // some trials fail
        method->on_trial_exited(work.trial, ExitKind::failed);
        continue;
      }
      out.push_back(searcher::to_json(method->on_validation(work.trial, work.target_length,
                                                            loss(work.hparams, work.target_length)))
                        .dump());
      if (round == restore_after && work.trial == works[1].trial) {  // mid-round
        auto fresh = searcher::make_method(e);
        fresh->restore(nlohmann::json::parse(method->snapshot().dump()));
        CHECK(fresh->snapshot() == method->snapshot());
        method = std::move(fresh);
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("pbt: the same events give the same answers, also across snapshot and restore", "[searcher][pbt]") {
  auto e = pbt(6, 4, ", explore_function: {resample_probability: 0.3, perturb_factor: 0.2}");
  auto reference = answers(e);
  CHECK(answers(e) == reference);
  CHECK(answers(e, 0) == reference);
  CHECK(answers(e, 2) == reference);
  CHECK(answers(pbt(6, 4, ", explore_function: {resample_probability: 0.3, perturb_factor: 0.2}", 18)) != reference);
}

namespace {

const char* kCurveSpace =
    "  x: {type: double, minval: 0, maxval: 1}\n"
    "  y: {type: double, minval: 0, maxval: 1}\n";

simulation::SimulationOptions cluster(const config::Experiment& e, int workers) {
  simulation::SimulationOptions options;
  options.workers = workers;
  options.tickets = searcher::ticket_count(e);
  options.curve = simulation::synthetic_curve(e.seed, 0.05, 800);
  return options;
}

}  // namespace

TEST_CASE("pbt on a simulated cluster: every round runs, failures are replaced, the population improves",
          "[searcher][pbt]") {
  auto e = pbt(8, 8, ", replace_function: {truncate_fraction: 0.25}", 5, kCurveSpace);
  auto method = searcher::make_method(e);
  auto options = cluster(e, 8);
  // Trial 3 (round 0) and trial 13 (new in round 3: 8 + 2 x 2 = 12, 13) fail.
  options.fails = [](int trial, std::int64_t) { return trial == 3 || trial == 13; };
  auto result = simulation::simulate(*method, options);
  CHECK(result.violations.empty());
  CHECK(result.tickets_with_work == 64);
  CHECK(result.trials.size() == 8 + 7 * 2);  // n = int(0.25 x 8) = 2 new trials in each later round
  CHECK(result.ended("failed") == 2);
  CHECK(result.ended("completed") == 8);  // the last round's members
  CHECK(result.ended("paused") == 22 - 8 - 2);  // replaced along the way
  CHECK(result.reached(800) == 8);  // the last round's members, at 8 x 100
  CHECK_FALSE(result.work_left);

  // Exploiting the best and perturbing it moves the population toward the optimum (x 0.3, y 0.6).
  auto mean_final_loss = [&](std::int64_t length) {
    double sum = 0;
    int members = 0;
    for (const auto& [id, trial] : result.trials) {
      if (trial.length < length) continue;
      sum += simulation::synthetic_final_loss(trial.hparams, 800);
      ++members;
    }
    return sum / members;
  };
  double first = 0;
  for (int trial = 0; trial < 8; ++trial) first += simulation::synthetic_final_loss(result.trials.at(trial).hparams, 800);
  CHECK(mean_final_loss(800) < first / 8 - 0.02);
}

TEST_CASE("pbt on a simulated cluster: a method restored mid-run makes the same decisions", "[searcher][pbt]") {
  auto e = pbt(6, 4, ", explore_function: {resample_probability: 0.25, perturb_factor: 0.2}", 9, kCurveSpace);
  auto options = cluster(e, 4);  // fewer workers than members: tickets of the next round wait in slots
  options.fails = [](int trial, std::int64_t) { return trial == 7; };
  auto reference = simulation::simulate(*searcher::make_method(e), options);
  CHECK(reference.violations.empty());
  CHECK(reference.waits > 0);
  for (std::size_t restore_at : {std::size_t{5}, std::size_t{23}, std::size_t{40}}) {
    options.after_event = [&](std::size_t events, searcher::Method& current) -> std::unique_ptr<searcher::Method> {
      if (events != restore_at) return nullptr;
      auto fresh = searcher::make_method(e);
      fresh->restore(nlohmann::json::parse(current.snapshot().dump()));
      return fresh;
    };
    auto resumed = simulation::simulate(*searcher::make_method(e), options);
    CHECK(resumed.log == reference.log);
  }
}

TEST_CASE("pbt: the checkpoints later rounds may load are reported as referenced", "[searcher][pbt]") {
  using Ref = searcher::CheckpointReference;
  auto e = pbt(4, 3, ", replace_function: {truncate_fraction: 0.25}");
  auto method = searcher::make_method(e);
  CHECK(searcher::referenced_checkpoints(e, method->snapshot()).empty());  // round 0 starts from scratch
  for (int trial = 0; trial < 4; ++trial) method->on_work_requested(trial);
  method->on_validation(0, 100, 0.5);
  method->on_validation(1, 100, 0.2);
  // Round 0 is not over: any reported trial may still become a parent.
  CHECK(searcher::referenced_checkpoints(e, method->snapshot()) == std::vector<Ref>{{0, 100}, {1, 100}});
  method->on_validation(2, 100, 0.9);
  method->on_validation(3, 100, 0.4);
  // Round 1 is planned: member 2 exploits trial 1, the others continue themselves; trial 2's
  // checkpoint is no longer needed.
  CHECK(searcher::referenced_checkpoints(e, method->snapshot()) == std::vector<Ref>{{0, 100}, {1, 100}, {3, 100}});
  // Round 1 trains trials 0, 1, 4 (member 2's replacement) and 3.
  for (int trial : {0, 1, 3, 4}) method->on_validation(trial, 200, 0.1 * (trial + 1));
  // Round 2 (the last) is planned from round 1: trial 4 (the worst) is replaced by trial 5, a copy
  // of trial 0; the length-100 checkpoints and trial 4's are free.
  CHECK(searcher::referenced_checkpoints(e, method->snapshot()) == std::vector<Ref>{{0, 200}, {1, 200}, {3, 200}});
  for (int trial : {0, 1, 3, 5}) method->on_validation(trial, 300, 0.1);
  CHECK(searcher::referenced_checkpoints(e, method->snapshot()).empty());  // nothing comes after the last round
  auto random = config::parse_experiment("name: r\nentrypoint: x\nsearcher: {name: random, metric: m, max_trials: 2}\n", "r.yaml");
  CHECK(searcher::referenced_checkpoints(random, nlohmann::json::object()).empty());
}

TEST_CASE("pbt: a ticket two rounds ahead waits for a round not planned yet", "[pbt]") {
  // With more array tasks running than a population, a ticket of round 2 can ask while only
  // round 0 is planned; counting round 1's members read past the plan (found by journal_fuzz).
  const auto e = pbt(3, 4);
  auto method = searcher::make_method(e);
  const Work ahead = method->on_work_requested(2 * 3);
  CHECK(ahead.kind == Work::Kind::wait);
  CHECK(ahead.reason == "round 2 waits for round 1, which is not planned yet");
  const Work next = method->on_work_requested(3);
  CHECK(next.kind == Work::Kind::wait);
  CHECK(next.reason == "round 1 waits for round 0: 0 of 3 members have finished");
}
