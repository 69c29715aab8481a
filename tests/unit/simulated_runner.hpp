// SPDX-License-Identifier: Apache-2.0
#pragma once
// A simulated cluster for search methods: drives any searcher::Method the way the job array and
// the trainers will, over a simulated clock, with a synthetic learning curve. For method tests
// (ASHA, PBT, ...) and bench/bench_searcher.cpp.
//
// The cluster it simulates:
//   - `tickets` array tasks, at most `workers` running at once (the array throttle), started in
//     index order as slots free up. A task starts `task_start_seconds` after its slot frees and
//     asks on_work_requested(ticket):
//       train  the trial trains from start_length (loading checkpoint_trial's checkpoint at
//              start_length when given, `checkpoint_load_seconds`) to target_length (0: the
//              trainer's own length, `own_length`), `seconds_per_length` per unit;
//       wait   the task holds its slot and asks again later: first after `wait_first_retry_seconds`
//              (0: `wait_retry_seconds`), then after twice the previous pause, at most
//              `wait_retry_seconds` (dlx-launch's back-off, launcher/launch/src/searcher_work.cpp:
//              0.5 s doubling to 10 s);
//       none   the task ends.
//   - At its target the trainer saves a checkpoint there (durable before it reports, as the ASHA
//     protocol requires), computes the metric from the curve and calls on_validation:
//       continue_training  trains on to the new target in the same task;
//       stop, complete     the trial ends, the task ends;
//       pause              the trial ends paused (checkpoint kept), the task ends; a later
//                          ticket may resume it.
//     No exit event follows a decision (the coordinator's rule). A trial chosen by `fails` fails
//     on its way to that length instead: on_trial_exited(failed), the task ends.
//   - Protocol breaches (training a trial that is running, resuming from a checkpoint that does
//     not exist, a target not beyond the start, an unknown trial) are collected in `violations`.
// Everything is deterministic: events at the same time run in the order they were scheduled.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlx/searcher/method.hpp"

namespace dlx::simulation {

// One stretch of training with one set of hyperparameters. A trial's lineage is the segments
// that produced its weights: its own, after those of the trial whose checkpoint it started from
// (PBT's exploit), so a curve can model inherited progress.
struct Segment {
  int trial = 0;
  nlohmann::ordered_json hparams;
  std::int64_t from_length = 0;
  std::int64_t to_length = 0;
};

struct CurvePoint {
  int trial = 0;
  const nlohmann::ordered_json* hparams = nullptr;  // the trial's own
  std::int64_t length = 0;
  const std::vector<Segment>* lineage = nullptr;    // oldest first, the last one is this trial's
};

using Curve = std::function<double(const CurvePoint&)>;

// The synthetic family used by the tests and the benchmark. Hyperparameters "x" and "y" in [0, 1]:
//   final(x, y) = 0.1 + (x - 0.3)^2 + 0.5 (y - 0.6)^2       the loss it converges to (best 0.1)
//   tau(y)      = max_length (0.03 + 0.02 y)                how slowly it learns
//   r(L)        = tau / (tau + L)                           the share of the way still to go
//   loss(L)     = final + (1.5 - final) r(L) + noise (r(L) N1 + 0.02 N2)
// Every curve starts at 1.5 and falls like 1 / (1 + L / tau) toward `final`. Large y learns more
// slowly, so a slow but good configuration can trail a fast mediocre one early on: curves cross,
// mildly, as in real training. N1, N2 are standard normal draws that are a pure function of
// (seed, trial, length): the same trial at the same length always reads the same value.
Curve synthetic_curve(std::uint64_t seed, double noise, std::int64_t max_length);
// The curve's value without noise at max_length: the true quality of a configuration.
double synthetic_final_loss(const nlohmann::ordered_json& hparams, std::int64_t max_length);

struct SimulationOptions {
  int workers = 4;
  int tickets = 0;  // the array size, e.g. searcher::ticket_count(experiment)
  double seconds_per_length = 1.0;
  double task_start_seconds = 0.0;
  double checkpoint_load_seconds = 0.0;
  double wait_retry_seconds = 5.0;        // the longest pause between a waiting task's questions
  double wait_first_retry_seconds = 0.0;  // its first pause (0: wait_retry_seconds; no back-off)
  std::int64_t own_length = 100;  // the trainer's own length, for work without a target
  Curve curve;
  // Trial `trial` fails on its way to `length` (nullptr: nothing fails).
  std::function<bool(int trial, std::int64_t length)> fails;
  // Called after every event with how many happened; a non-null return replaces the method
  // from then on (snapshot/restore tests).
  std::function<std::unique_ptr<searcher::Method>(std::size_t events, searcher::Method& current)> after_event;
};

struct Validation {
  double time = 0;
  std::int64_t length = 0;
  double metric = 0;
  searcher::Decision decision;
};

struct TrialOutcome {
  nlohmann::ordered_json hparams;
  std::vector<Validation> validations;
  std::string end = "running";  // running | completed | stopped | paused | failed
  int runs = 0;                 // tickets that trained it (1 + resumptions)
  std::int64_t length = 0;      // how far it trained
};

// A stretch of worker time: training, or setting up (an array task's start, a checkpoint load)
// for a ticket that got work.
struct Interval {
  double from = 0;
  double to = 0;
  bool training = true;
};

struct SimulationResult {
  std::map<int, TrialOutcome> trials;
  std::vector<std::string> log;         // one line per event: compare runs for determinism
  std::vector<std::string> violations;  // protocol breaches; empty in a correct run
  int tickets_started = 0;
  int tickets_with_work = 0;            // tickets that got train work
  int waits = 0;
  double makespan = 0;                  // when the last ticket ended
  double busy_seconds = 0;              // worker time spent training
  std::vector<Interval> busy;           // every training and set-up stretch
  double last_fresh_start = 0;          // when the last trial from scratch was handed out
  int workers = 0;
  // After the run: true when a further ticket would still get work (the tickets ran out).
  bool work_left = false;

  double busy_fraction() const { return busy_seconds / (workers * makespan); }
  // The share of worker time in [0, until] spent training (and setting up, with `setup`).
  double occupancy(double until, bool setup) const;
  // Trials with a validation at `length` or beyond.
  int reached(std::int64_t length) const;
  // Trials whose run ended this way.
  int ended(const std::string& how) const;
  // The earliest time a validation at `length` or beyond satisfied `good`; nullopt if none did.
  std::optional<double> first_time(std::int64_t length,
                                   const std::function<bool(int trial, const Validation&)>& good) const;
};

SimulationResult simulate(searcher::Method& method, SimulationOptions options);

}  // namespace dlx::simulation
