// SPDX-License-Identifier: Apache-2.0
// async_halving, both variants: the promotion and stopping rules as tables, then whole runs on
// the simulated cluster with a fixed seed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dlx/config/parse.hpp"
#include "dlx/searcher/method.hpp"
#include "simulated_runner.hpp"

using namespace dlx;
using searcher::Decision;
using searcher::ExitKind;
using searcher::Work;

namespace {

const std::string kSpace =
    "  x: {type: double, minval: 0, maxval: 1}\n"
    "  y: {type: double, minval: 0, maxval: 1}\n";

config::Experiment asha(int max_trials, int divisor, int max_rungs, int max_length, bool stop_once,
                        bool smaller_is_better = true) {
  return config::parse_experiment(
      fmt::format("name: t\nentrypoint: x\nseed: 42\nsearcher: {{name: async_halving, metric: loss, "
                  "smaller_is_better: {}, max_trials: {}, divisor: {}, max_rungs: {}, max_length: {{batches: {}}}, "
                  "stop_once: {}}}\nhyperparameters:\n{}",
                  smaller_is_better, max_trials, divisor, max_rungs, max_length, stop_once, kSpace),
      "t.yaml");
}

// Gets work for tickets 0..n-1 (each a new trial here).
void start_trials(searcher::Method& method, int n) {
  for (int ticket = 0; ticket < n; ++ticket) REQUIRE(method.on_work_requested(ticket).kind == Work::Kind::train);
}

// A method wrapper that checks the method.hpp rules on every call: a wait leaves the snapshot
// unchanged; a failed trial is never handed to a ticket again.
class RuleChecker final : public searcher::Method {
 public:
  explicit RuleChecker(std::unique_ptr<searcher::Method> inner) : inner_(std::move(inner)) {}
  Work on_work_requested(int ticket) override {
    auto before = inner_->snapshot();
    Work work = inner_->on_work_requested(ticket);
    if (work.kind == Work::Kind::wait) {
      ++waits;
      if (inner_->snapshot() != before) ++wait_changed_state;
    }
    if (work.kind == Work::Kind::train && failed.contains(work.trial)) ++failed_trial_resumed;
    return work;
  }
  Decision on_validation(int trial, std::int64_t length, double metric) override {
    return inner_->on_validation(trial, length, metric);
  }
  void on_trial_exited(int trial, ExitKind how) override {
    if (how == ExitKind::failed) failed.insert(trial);
    inner_->on_trial_exited(trial, how);
  }
  nlohmann::json snapshot() const override { return inner_->snapshot(); }
  void restore(const nlohmann::json& state) override { inner_->restore(state); }

  int waits = 0, wait_changed_state = 0, failed_trial_resumed = 0;
  std::set<int> failed;

 private:
  std::unique_ptr<searcher::Method> inner_;
};

simulation::SimulationOptions options_for(const config::Experiment& experiment, int workers, double noise = 0.1) {
  simulation::SimulationOptions options;
  options.workers = workers;
  options.tickets = searcher::ticket_count(experiment);
  options.curve = simulation::synthetic_curve(11, noise, experiment.searcher.max_length->value);
  options.checkpoint_load_seconds = 0.5;
  return options;
}

}  // namespace

TEST_CASE("stopping variant: continue iff rank < max(1, floor(n / divisor))", "[searcher][asha]") {
  // Rungs at lengths 2 and 4, divisor 2. Each row: the metric reported at rung 0 by the next
  // trial, and the expected decision (the rung's sorted results after it in the comment).
  auto experiment = asha(8, 2, 2, 4, true);
  auto method = searcher::make_method(experiment);
  start_trials(*method, 8);
  struct Row {
    double metric;
    Decision::Kind expected;
  };
  const std::vector<Row> rows{
      {0.5, Decision::Kind::continue_training},  // n=1, keep 1: .5
      {0.4, Decision::Kind::continue_training},  // n=2, keep 1: .4 .5
      {0.6, Decision::Kind::stop},               // n=3, keep 1: .4 .5 .6 (rank 3)
      {0.3, Decision::Kind::continue_training},  // n=4, keep 2: .3 .4 .5 .6
      {0.45, Decision::Kind::stop},              // n=5, keep 2: rank 3
      {0.42, Decision::Kind::continue_training},  // n=6, keep 3: .3 .4 .42 (rank 3 of 6)
      {0.42, Decision::Kind::stop},  // n=7, keep 3: a tie goes to the lower id, trial 5: rank 4
      {0.1, Decision::Kind::continue_training},  // n=8, keep 4
  };
  for (int trial = 0; trial < 8; ++trial) {
    INFO("trial " << trial);
    Decision decision = method->on_validation(trial, 2, rows[static_cast<std::size_t>(trial)].metric);
    CHECK(decision.kind == rows[static_cast<std::size_t>(trial)].expected);
    if (decision.kind == Decision::Kind::continue_training) CHECK(decision.target_length == 4);
  }
  Decision top = method->on_validation(0, 4, 0.45);
  CHECK(top.kind == Decision::Kind::complete);
  CHECK(top.reason == "rung 1 (length 4, the top): loss 0.45 ranks 1 of 1; complete");
  CHECK(method->on_work_requested(8).kind == Work::Kind::none);  // one ticket per trial
}

TEST_CASE("stopping variant: larger-is-better metrics and the reason line", "[searcher][asha]") {
  auto experiment = asha(4, 2, 2, 4, true, /*smaller_is_better=*/false);
  auto method = searcher::make_method(experiment);
  start_trials(*method, 3);
  CHECK(method->on_validation(0, 2, 0.7).kind == Decision::Kind::continue_training);
  Decision better = method->on_validation(1, 2, 0.9);
  CHECK(better.kind == Decision::Kind::continue_training);
  CHECK(better.reason == "rung 0 (length 2): loss 0.9 ranks 1 of 2; top 1 continue; go on to length 4");
  Decision worse = method->on_validation(2, 2, 0.8);
  CHECK(worse.kind == Decision::Kind::stop);
  CHECK(worse.reason == "rung 0 (length 2): loss 0.8 ranks 2 of 3; top 1 continue; stop");
}

TEST_CASE("promotion variant: in place, pause, resume by a later ticket, wait, none", "[searcher][asha]") {
  auto experiment = asha(4, 2, 2, 4, false);  // rungs at 2 and 4
  auto method = searcher::make_method(experiment);
  start_trials(*method, 4);

  Decision first = method->on_validation(0, 2, 0.3);  // n=1, quota floor(1/2) = 0
  CHECK(first.kind == Decision::Kind::pause);
  CHECK(first.reason == "rung 0 (length 2): loss 0.3 ranks 1 of 1; top 0 promoted; pause at length 2 until promoted");
  Decision second = method->on_validation(1, 2, 0.5);  // n=2, quota 1: trial 0 holds it
  CHECK(second.kind == Decision::Kind::pause);

  // Trial 0 now ranks inside the quota: the next ticket resumes it from its own checkpoint.
  Work resume = method->on_work_requested(4);
  CHECK(resume.kind == Work::Kind::train);
  CHECK(resume.trial == 0);
  CHECK(resume.start_length == 2);
  CHECK(resume.checkpoint_trial == 0);
  CHECK(resume.target_length == 4);
  CHECK(resume.hparams == method->on_work_requested(0).hparams);
  CHECK(resume.reason == "resume trial 0: rung 0 (length 2): loss 0.3 ranks 1 of 2; top 1 promoted; train from length 2 to 4");

  Decision third = method->on_validation(2, 2, 0.2);  // n=3, quota 1, rank 1: promoted in place
  CHECK(third.kind == Decision::Kind::continue_training);
  CHECK(third.target_length == 4);

  // Trials 0, 2 (running) and 3 (training) may still change things: wait, and nothing changes.
  auto before = method->snapshot();
  Work wait = method->on_work_requested(5);
  CHECK(wait.kind == Work::Kind::wait);
  CHECK(wait.reason == "no paused trial can be promoted yet; 3 trials are still running");
  CHECK(method->snapshot() == before);

  CHECK(method->on_validation(3, 2, 0.9).kind == Decision::Kind::pause);  // n=4, quota 2: rank 4
  CHECK(method->on_validation(0, 4, 0.25).kind == Decision::Kind::complete);
  method->on_trial_exited(2, ExitKind::failed);  // on its way to rung 1: the worst result there
  // Rung 0 is closed: quota max(1, floor(4/2)) = 2 is taken by trials 0 and 2; trial 1 ranks 3rd.
  Work none = method->on_work_requested(5);
  CHECK(none.kind == Work::Kind::none);
  CHECK(none.reason == "all 4 trials were created and no paused trial can be promoted");
}

TEST_CASE("promotion variant: a closed rung promotes its best even below divisor results", "[searcher][asha]") {
  auto experiment = asha(3, 4, 2, 16, false);  // rungs at 4 and 16; floor(3/4) = 0
  auto method = searcher::make_method(experiment);
  start_trials(*method, 3);
  CHECK(method->on_validation(0, 4, 0.2).kind == Decision::Kind::pause);
  CHECK(method->on_validation(1, 4, 0.5).kind == Decision::Kind::pause);
  CHECK(method->on_work_requested(3).kind == Work::Kind::wait);  // trial 2 still training
  Decision last = method->on_validation(2, 4, 0.4);  // the rung closes; it ranks 2nd of 3
  CHECK(last.kind == Decision::Kind::pause);
  Work resume = method->on_work_requested(3);
  CHECK(resume.kind == Work::Kind::train);
  CHECK(resume.trial == 0);
  CHECK(resume.reason ==
        "resume trial 0: rung 0 (length 4): loss 0.2 ranks 1 of 3; top 1 (rung closed) promoted; train from length 4 to 16");
  CHECK(method->on_validation(0, 16, 0.1).kind == Decision::Kind::complete);
  CHECK(method->on_work_requested(4).kind == Work::Kind::none);
}

TEST_CASE("promotion variant: a failed trial is never promoted", "[searcher][asha]") {
  auto experiment = asha(4, 2, 2, 4, false);
  auto method = searcher::make_method(experiment);
  start_trials(*method, 4);
  CHECK(method->on_validation(0, 2, 0.1).kind == Decision::Kind::pause);
  method->on_trial_exited(0, ExitKind::failed);  // its checkpoint is not to be trusted
  CHECK(method->on_validation(1, 2, 0.5).kind == Decision::Kind::pause);  // quota 1: trial 0's
  method->on_trial_exited(2, ExitKind::failed);  // failed before rung 0: ranks last there
  CHECK(method->on_validation(3, 2, 0.7).kind == Decision::Kind::pause);  // n=4, quota 2: rank 3
  // Closed: quota 2 covers trials 0 (failed) and 1: trial 1 goes on, trial 0 never does.
  Work work = method->on_work_requested(4);
  CHECK(work.trial == 1);
  CHECK(method->on_validation(1, 4, 0.4).kind == Decision::Kind::complete);
  CHECK(method->on_work_requested(5).kind == Work::Kind::none);
}

TEST_CASE("ties rank by trial id", "[searcher][asha]") {
  auto experiment = asha(4, 2, 2, 4, true);
  auto method = searcher::make_method(experiment);
  start_trials(*method, 4);
  CHECK(method->on_validation(1, 2, 0.5).kind == Decision::Kind::continue_training);
  Decision tie = method->on_validation(0, 2, 0.5);  // same metric, lower id: ranks first
  CHECK(tie.reason.find("ranks 1 of 2") != std::string::npos);
  Decision later_tie = method->on_validation(3, 2, 0.5);
  CHECK(later_tie.reason.find("ranks 3 of 3") != std::string::npos);
  CHECK(later_tie.kind == Decision::Kind::stop);
}

TEST_CASE("ASHA runs: rung sizes, determinism, bounds", "[searcher][asha][simulation]") {
  const bool stop_once = GENERATE(false, true);
  INFO("stop_once " << stop_once);
  auto experiment = asha(64, 4, 4, 64, stop_once);  // rungs 1, 4, 16, 64
  auto checked = RuleChecker(searcher::make_method(experiment));
  auto options = options_for(experiment, 8);
  options.fails = [](int trial, std::int64_t length) { return trial % 13 == 5 && length >= 4; };
  auto result = simulation::simulate(checked, options);

  CHECK(result.violations.empty());
  CHECK(result.trials.size() == 64);
  CHECK_FALSE(result.work_left);
  CHECK(result.tickets_with_work <= searcher::ticket_count(experiment));
  CHECK(checked.wait_changed_state == 0);
  CHECK(checked.failed_trial_resumed == 0);
  for (int failed : checked.failed) CHECK(result.trials.at(failed).end == "failed");
  CHECK(result.reached(1) == 64);
  if (stop_once) {
    // Determined's rule: max(1, floor(n/4)) per rung, judged when each result arrives.
    CHECK(result.reached(4) == 12);
    CHECK(result.reached(16) == 5);
    CHECK(result.reached(64) == 2);
    CHECK(result.ended("stopped") == 60);
    CHECK(result.waits == 0);
  } else {
    // 16 promoted out of rung 0 (two of them fail on the way to rung 1), 5 reach rung 2 (more
    // than 16/4: asynchronous promotion), 1 the top; 64 new trials + 7 resumed promotions;
    // everyone else stays paused.
    CHECK(result.reached(4) == 14);
    CHECK(result.reached(16) == 5);
    CHECK(result.reached(64) == 1);
    CHECK(result.ended("failed") == 2);
    CHECK(result.ended("paused") == 61);
    CHECK(result.tickets_with_work == 71);
  }

  auto again = simulation::simulate(*searcher::make_method(experiment), options);
  CHECK(again.log == result.log);
}

TEST_CASE("noiseless, non-crossing curves: the best config found is the best config tried", "[searcher][asha]") {
  const bool stop_once = GENERATE(false, true);
  const int divisor = GENERATE(2, 3, 4);
  INFO("stop_once " << stop_once << " divisor " << divisor);
  auto experiment = asha(40, divisor, 4, 81, stop_once);
  auto method = searcher::make_method(experiment);
  auto options = options_for(experiment, 5);
  // Every configuration keeps its rank at every length: early results tell the truth.
  options.curve = [](const simulation::CurvePoint& point) {
    const double x = point.hparams->value("x", 0.5);
    return (x - 0.3) * (x - 0.3) + 1.0 / (1.0 + static_cast<double>(point.length));
  };
  auto result = simulation::simulate(*method, options);
  REQUIRE(result.violations.empty());
  int truly_best = -1;
  for (const auto& [id, trial] : result.trials) {
    const double distance = std::abs(trial.hparams.value("x", 0.5) - 0.3);
    if (truly_best < 0 || distance < std::abs(result.trials.at(truly_best).hparams.value("x", 0.5) - 0.3)) truly_best = id;
  }
  CHECK(result.trials.at(truly_best).length == 81);
  CHECK(result.trials.at(truly_best).end == "completed");
}

TEST_CASE("snapshot/restore mid-run gives the same later decisions", "[searcher][asha][snapshot]") {
  const bool stop_once = GENERATE(false, true);
  const std::size_t cut = GENERATE(std::size_t{1}, std::size_t{37}, std::size_t{150});
  INFO("stop_once " << stop_once << " cut after event " << cut);
  auto experiment = asha(32, 3, 4, 27, stop_once);
  auto options = options_for(experiment, 4);
  options.fails = [](int trial, std::int64_t) { return trial == 6; };
  auto reference = simulation::simulate(*searcher::make_method(experiment), options);

  options.after_event = [&](std::size_t events, searcher::Method& current) -> std::unique_ptr<searcher::Method> {
    if (events != cut) return nullptr;
    auto fresh = searcher::make_method(experiment);
    fresh->restore(nlohmann::json::parse(current.snapshot().dump()));  // through text, as stored
    CHECK(fresh->snapshot() == current.snapshot());
    return fresh;
  };
  auto resumed = simulation::simulate(*searcher::make_method(experiment), options);
  CHECK(resumed.log == reference.log);
}

TEST_CASE("ticket_count bounds every run, also when promotions come in the worst order", "[searcher][asha][tickets]") {
  const int divisor = GENERATE(2, 3, 4);
  const int workers = GENERATE(1, 3, 16);
  const int trials = GENERATE(5, 30);
  INFO("divisor " << divisor << " workers " << workers << " trials " << trials);
  auto experiment = asha(trials, divisor, 5, 81, false);
  for (int order = 0; order < 3; ++order) {
    auto method = searcher::make_method(experiment);
    auto options = options_for(experiment, workers, 0.3);
    options.tickets = 10 * searcher::ticket_count(experiment);  // more than enough: count what is used
    if (order == 1) {  // each trial better than all before: every result is promoted in place
      options.curve = [](const simulation::CurvePoint& point) { return 1.0 / (1.0 + point.trial) + 1.0 / static_cast<double>(point.length); };
    }
    if (order == 2) {  // each worse than all before: promotions only by resuming paused trials
      options.curve = [](const simulation::CurvePoint& point) { return point.trial + 1.0 / static_cast<double>(point.length); };
    }
    auto result = simulation::simulate(*method, options);
    INFO("order " << order);
    CHECK(result.violations.empty());
    CHECK(result.tickets_with_work <= searcher::ticket_count(experiment));
    CHECK(result.reached(81) >= 1);
  }
}

TEST_CASE("simulated cluster: a waiting ticket backs off like dlx-launch, first pause doubling to the longest",
          "[searcher][asha][simulation]") {
  auto experiment = asha(8, 2, 3, 16, false);
  auto options = options_for(experiment, 4);
  options.seconds_per_length = 10;  // long training: tickets wait many times
  options.wait_first_retry_seconds = 0.5;
  options.wait_retry_seconds = 4;
  auto method = searcher::make_method(experiment);
  auto result = simulation::simulate(*method, options);
  REQUIRE(result.violations.empty());
  REQUIRE(result.waits > 0);
  // Each ticket's questions answered "wait", in time order: ticket -> times.
  std::map<int, std::vector<double>> asked;
  for (const auto& line : result.log) {
    double time = 0;
    int ticket = 0;
    char kind[16] = {};
    if (std::sscanf(line.c_str(), "%lf ticket %d %15s", &time, &ticket, kind) == 3 && std::string(kind) == "wait") {
      asked[ticket].push_back(time);
    }
  }
  std::size_t longest = 0;
  for (const auto& [ticket, times] : asked) {
    INFO("ticket " << ticket);
    longest = std::max(longest, times.size());
    for (std::size_t i = 1; i < times.size(); ++i) {
      const double expected = std::min(0.5 * std::pow(2.0, static_cast<double>(i - 1)), 4.0);
      CHECK(times[i] - times[i - 1] == Approx(expected));
    }
  }
  CHECK(longest >= 6);  // some ticket waited 0.5, 1, 2, 4 and then 4 s again
}

TEST_CASE("simulated cluster: without a first pause a waiting ticket asks every wait_retry_seconds",
          "[searcher][asha][simulation]") {
  auto experiment = asha(8, 2, 3, 16, false);
  auto options = options_for(experiment, 4);
  options.seconds_per_length = 10;
  options.wait_retry_seconds = 3;
  auto method = searcher::make_method(experiment);
  auto result = simulation::simulate(*method, options);
  REQUIRE(result.violations.empty());
  std::map<int, std::vector<double>> asked;
  for (const auto& line : result.log) {
    double time = 0;
    int ticket = 0;
    char kind[16] = {};
    if (std::sscanf(line.c_str(), "%lf ticket %d %15s", &time, &ticket, kind) == 3 && std::string(kind) == "wait") {
      asked[ticket].push_back(time);
    }
  }
  int gaps = 0;
  for (const auto& [ticket, times] : asked) {
    for (std::size_t i = 1; i < times.size(); ++i, ++gaps) CHECK(times[i] - times[i - 1] == Approx(3.0));
  }
  CHECK(gaps > 0);
}
