// SPDX-License-Identifier: Apache-2.0
#include "simulated_runner.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <queue>

#include <fmt/format.h>

namespace dlx::simulation {

namespace {

std::uint64_t mix(std::uint64_t x) {  // SplitMix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double unit(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

// A standard normal draw that depends only on (seed, trial, length, which).
double normal(std::uint64_t seed, int trial, std::int64_t length, std::uint64_t which) {
  std::uint64_t key = mix(mix(mix(seed) ^ static_cast<std::uint64_t>(trial)) ^ static_cast<std::uint64_t>(length));
  key = mix(key ^ which);
  const double u1 = 1.0 - unit(key), u2 = unit(mix(key));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double tau_of(const nlohmann::ordered_json& hparams, std::int64_t max_length) {
  return static_cast<double>(max_length) * (0.03 + 0.02 * hparams.value("y", 0.5));
}

double final_of(const nlohmann::ordered_json& hparams) {
  const double x = hparams.value("x", 0.5), y = hparams.value("y", 0.5);
  return 0.1 + (x - 0.3) * (x - 0.3) + 0.5 * (y - 0.6) * (y - 0.6);
}

}  // namespace

double synthetic_final_loss(const nlohmann::ordered_json& hparams, std::int64_t max_length) {
  const double tau = tau_of(hparams, max_length), final_loss = final_of(hparams);
  return final_loss + (1.5 - final_loss) * tau / (tau + static_cast<double>(max_length));
}

Curve synthetic_curve(std::uint64_t seed, double noise, std::int64_t max_length) {
  return [=](const CurvePoint& point) {
    const auto& hparams = *point.hparams;
    const double final_loss = final_of(hparams);
    const double tau = tau_of(hparams, max_length);
    const double remaining = tau / (tau + static_cast<double>(point.length));
    return final_loss + (1.5 - final_loss) * remaining + noise * remaining * normal(seed, point.trial, point.length, 1) +
           noise * 0.02 * normal(seed, point.trial, point.length, 2);
  };
}

double SimulationResult::occupancy(double until, bool setup) const {
  double used = 0;
  for (const auto& interval : busy) {
    if (!interval.training && !setup) continue;
    used += std::max(0.0, std::min(interval.to, until) - std::min(interval.from, until));
  }
  return used / (workers * until);
}

int SimulationResult::reached(std::int64_t length) const {
  int count = 0;
  for (const auto& [id, trial] : trials) {
    if (!trial.validations.empty() && trial.validations.back().length >= length) ++count;
  }
  return count;
}

int SimulationResult::ended(const std::string& how) const {
  int count = 0;
  for (const auto& [id, trial] : trials) count += trial.end == how ? 1 : 0;
  return count;
}

std::optional<double> SimulationResult::first_time(
    std::int64_t length, const std::function<bool(int, const Validation&)>& good) const {
  std::optional<double> first;
  for (const auto& [id, trial] : trials) {
    for (const auto& validation : trial.validations) {
      if (validation.length >= length && good(id, validation) && (!first || validation.time < *first)) {
        first = validation.time;
      }
    }
  }
  return first;
}

namespace {

using searcher::Decision;
using searcher::ExitKind;
using searcher::Work;

struct Event {
  double time = 0;
  std::uint64_t sequence = 0;
  bool ask = true;  // ask for work, or reach a target
  int ticket = 0;
  int trial = 0;
  std::int64_t length = 0;
  bool operator>(const Event& other) const {
    return time != other.time ? time > other.time : sequence > other.sequence;
  }
};

struct Running {
  int ticket = 0;
  std::vector<Segment> lineage;
};

class Simulator {
 public:
  Simulator(searcher::Method& method, SimulationOptions options) : method_(&method), options_(std::move(options)) {
    result_.workers = options_.workers;
  }

  SimulationResult run() {
    for (int slot = 0; slot < options_.workers; ++slot) start_next_ticket(0);
    std::size_t events = 0;
    while (!queue_.empty()) {
      Event event = queue_.top();
      queue_.pop();
      if (event.ask) ask(event);
      else reach(event);
      if (++events > 50'000'000) {
        result_.violations.push_back("the run did not finish within 50 million events");
        break;
      }
      if (options_.after_event) {
        if (auto replacement = options_.after_event(events, *method_)) {
          owned_ = std::move(replacement);
          method_ = owned_.get();
        }
      }
    }
    result_.work_left = method_->on_work_requested(next_ticket_).kind != Work::Kind::none;
    return std::move(result_);
  }

 private:
  void schedule(Event event) {
    event.sequence = sequence_++;
    queue_.push(event);
  }

  void start_next_ticket(double now) {
    if (next_ticket_ >= options_.tickets) return;
    ++result_.tickets_started;
    schedule({.time = now + options_.task_start_seconds, .ask = true, .ticket = next_ticket_++});
  }

  void end_ticket(double now) {
    result_.makespan = std::max(result_.makespan, now);
    start_next_ticket(now);
  }

  void breach(double now, const std::string& what) {
    result_.violations.push_back(fmt::format("t={:.1f}: {}", now, what));
  }

  void ask(const Event& event) {
    const double now = event.time;
    const Work work = method_->on_work_requested(event.ticket);
    result_.log.push_back(fmt::format("{:.3f} ticket {} {} trial {} from {}{} to {}: {}", now, event.ticket,
                                      to_string(work.kind), work.trial, work.start_length,
                                      work.checkpoint_trial ? fmt::format(" (ckpt of {})", *work.checkpoint_trial) : "",
                                      work.target_length, work.reason));
    if (work.kind == Work::Kind::wait) {
      ++result_.waits;
      // dlx-launch's back-off: a ticket's first pause, doubling up to wait_retry_seconds.
      auto pause = wait_pauses_.try_emplace(event.ticket, options_.wait_first_retry_seconds > 0
                                                              ? options_.wait_first_retry_seconds
                                                              : options_.wait_retry_seconds).first;
      schedule({.time = now + pause->second, .ask = true, .ticket = event.ticket});
      pause->second = std::min(2 * pause->second, options_.wait_retry_seconds);
      return;
    }
    if (work.kind == Work::Kind::none) {
      end_ticket(now);
      return;
    }
    ++result_.tickets_with_work;
    if (running_.contains(work.trial)) {
      breach(now, fmt::format("ticket {} got trial {}, which ticket {} is running", event.ticket, work.trial,
                              running_[work.trial].ticket));
      end_ticket(now);
      return;
    }
    Running run{event.ticket, {}};
    double load = 0;
    if (work.checkpoint_trial) {
      auto checkpoint = checkpoints_.find({*work.checkpoint_trial, work.start_length});
      if (checkpoint == checkpoints_.end()) {
        breach(now, fmt::format("trial {} resumes from trial {}'s checkpoint at {}, which does not exist", work.trial,
                                *work.checkpoint_trial, work.start_length));
        end_ticket(now);
        return;
      }
      run.lineage = checkpoint->second;
      load = options_.checkpoint_load_seconds;
    } else if (work.start_length != 0) {
      breach(now, fmt::format("trial {} starts at {} without a checkpoint", work.trial, work.start_length));
    }
    const std::int64_t target = work.target_length > 0 ? work.target_length : options_.own_length;
    if (target <= work.start_length) {
      breach(now, fmt::format("trial {}: target {} is not beyond its start {}", work.trial, target, work.start_length));
      end_ticket(now);
      return;
    }
    run.lineage.push_back({work.trial, work.hparams, work.start_length, work.start_length});
    result_.busy.push_back({now - options_.task_start_seconds, now + load, false});
    if (!work.checkpoint_trial) result_.last_fresh_start = now;
    auto& outcome = result_.trials[work.trial];
    if (outcome.runs == 0) outcome.hparams = work.hparams;
    ++outcome.runs;
    outcome.end = "running";
    running_[work.trial] = std::move(run);
    train(now + load, event.ticket, work.trial, work.start_length, target);
  }

  void train(double from_time, int ticket, int trial, std::int64_t from, std::int64_t to) {
    const double seconds = static_cast<double>(to - from) * options_.seconds_per_length;
    result_.busy_seconds += seconds;
    result_.busy.push_back({from_time, from_time + seconds, true});
    schedule({.time = from_time + seconds, .ask = false, .ticket = ticket, .trial = trial, .length = to});
  }

  void reach(const Event& event) {
    const double now = event.time;
    auto& run = running_.at(event.trial);
    auto& outcome = result_.trials[event.trial];
    if (options_.fails && options_.fails(event.trial, event.length)) {
      method_->on_trial_exited(event.trial, ExitKind::failed);
      result_.log.push_back(fmt::format("{:.3f} trial {} failed before {}", now, event.trial, event.length));
      outcome.end = "failed";
      running_.erase(event.trial);
      end_ticket(now);
      return;
    }
    run.lineage.back().to_length = event.length;
    outcome.length = event.length;
    checkpoints_[{event.trial, event.length}] = run.lineage;
    const CurvePoint point{event.trial, &run.lineage.back().hparams, event.length, &run.lineage};
    const double metric = options_.curve(point);
    const Decision decision = method_->on_validation(event.trial, event.length, metric);
    outcome.validations.push_back({now, event.length, metric, decision});
    result_.log.push_back(fmt::format("{:.3f} trial {} at {}: {:.6f} -> {} {}: {}", now, event.trial, event.length,
                                      metric, to_string(decision.kind), decision.target_length, decision.reason));
    if (decision.kind == Decision::Kind::continue_training) {
      if (decision.target_length > event.length) {
        train(now, run.ticket, event.trial, event.length, decision.target_length);
        return;
      }
      breach(now, fmt::format("trial {} told to continue to {} from {}", event.trial, decision.target_length,
                              event.length));
    }
    outcome.end = decision.kind == Decision::Kind::stop    ? "stopped"
                  : decision.kind == Decision::Kind::pause ? "paused"
                                                           : "completed";
    running_.erase(event.trial);
    end_ticket(now);
  }

  searcher::Method* method_;
  std::unique_ptr<searcher::Method> owned_;
  SimulationOptions options_;
  SimulationResult result_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  std::uint64_t sequence_ = 0;
  int next_ticket_ = 0;
  std::map<int, Running> running_;
  std::map<int, double> wait_pauses_;  // ticket -> its next pause while it waits
  std::map<std::pair<int, std::int64_t>, std::vector<Segment>> checkpoints_;
};

}  // namespace

SimulationResult simulate(searcher::Method& method, SimulationOptions options) {
  return Simulator(method, std::move(options)).run();
}

}  // namespace dlx::simulation
