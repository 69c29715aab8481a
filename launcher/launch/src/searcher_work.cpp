// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/searcher_work.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "dlx/common/directories.hpp"
#include "dlx/config/experiment.hpp"
#include "dlx/config/hparam_tree.hpp"
#include "dlx/config/names.hpp"
#include "dlx/launch/child_process.hpp"
#include "dlx/launch/launch_error.hpp"
#include "dlx/launch/lost_trials.hpp"
#include "dlx/launch/resume_checkpoint.hpp"
#include "dlx/launch/slot_yield.hpp"
#include "dlx/searcher/coordinator.hpp"
#include "dlx/searcher/trial_plan.hpp"
#include "dlx/summary/experiment_summary.hpp"
#include "dlx/store/experiment_layout.hpp"

namespace dlx::launch {

namespace {

std::chrono::seconds wait_limit(const env::EnvMap& env) {
  return std::chrono::seconds(env::lookup_int(env, "DLX_WORK_WAIT_S").value_or(86400));
}

// How long a waiting ticket keeps its array slot, at least, before it yields it (slot_yield.hpp).
std::chrono::seconds hold_limit(const env::EnvMap& env) {
  return std::chrono::seconds(env::lookup_int(env, "DLX_WORK_HOLD_S").value_or(0));
}

// While a ticket waits in a throttled array, it asks again at least this often: a trial requeued
// meanwhile gets the slot within about this long (plus Slurm's own delays).
constexpr auto kThrottledPause = std::chrono::milliseconds(2000);

// The trial this ticket should yield its slot to, per the journal (`state`) and squeue.
std::optional<TrialToResume> yield_to(const searcher::SearchState& state, int ticket, const std::string& array_job) {
  const auto pending = pending_array_tasks(array_job);
  if (!pending) return std::nullopt;
  const auto& experiment = state.experiment();
  const int tasks = searcher::array_task_count(experiment);
  return trial_to_resume(state, ticket, *pending, tasks < searcher::ticket_count(experiment) ? tasks : 0);
}

searcher::Work yielded(const TrialToResume& resume, int ticket, std::string_view when, std::FILE* log) {
  if (log) {
    fmt::print(log, "dlx-launch: ticket {} gives its slot back {}: trial {} (array task {}) waits to resume "
                    "(Slurm: {}); exiting {} so that Slurm requeues this ticket, which asks again when it restarts\n",
               ticket, when, resume.trial, resume.ticket, resume.reason, env::kRequeueExitCode);
  }
  searcher::Work work;
  work.kind = searcher::Work::Kind::wait;
  work.reason = fmt::format("trial {} waits to resume", resume.trial);
  return work;
}

}  // namespace

searcher::Work take_searcher_work(const config::Experiment& experiment, const env::TrialEnvironment& trial,
                                  const env::EnvMap& env, std::FILE* log, bool look_for_lost) {
  const auto ticket = static_cast<int>(trial.ticket.value_or(trial.trial_id));
  searcher::Coordinator coordinator(experiment, *trial.experiment_dir / searcher::kJournalFileName);
  summary::write_summary_on_commit(coordinator, *trial.experiment_dir, fmt::format("dlx-launch, ticket {}", ticket));
  const auto limit = wait_limit(env);
  const auto hold = hold_limit(env);
  const std::string array_job = env::lookup(env, "SLURM_ARRAY_JOB_ID").value_or("");
  // Yielding only helps a trial that waits for one of the array's own slots.
  const bool throttled = !array_job.empty() && searcher::array_throttle(experiment) > 0;
  // A ticket that has no work yet takes none while a requeued trial waits for a slot: the trial
  // that was running goes first (slot_yield.hpp).
  if (throttled) {
    coordinator.refresh();
    if (!coordinator.state().work_of(ticket)) {
      if (const auto resume = yield_to(coordinator.state(), ticket, array_job)) {
        return yielded(*resume, ticket, "before taking work", log);
      }
    }
  }
  const auto start = std::chrono::steady_clock::now();
  auto pause = std::chrono::milliseconds(500);
  bool said_wait = false;
  LostTrialLookout lost_trials(env, look_for_lost);
  for (;;) {
    auto work = coordinator.request_work(ticket);
    if (work.kind == searcher::Work::Kind::train) {
      if (log) fmt::print(log, "dlx-launch: ticket {}: trial {}: {}\n", ticket, work.trial, work.reason);
      return work;
    }
    if (work.kind == searcher::Work::Kind::none) {
      if (log) fmt::print(log, "dlx-launch: ticket {} has no work: {}\n", ticket, work.reason);
      return work;
    }
    // Inside a job array a waiting ticket gives its slot back by exiting 85 (RequeueExit): Slurm
    // requeues it and it asks again when it next starts. It does so at a notice (preemption,
    // scontrol requeue, the time limit), and at once (after DLX_WORK_HOLD_S, 0 by default) when
    // a requeued trial of the array waits for a slot.
    if (!array_job.empty()) {
      if (const int notice = notice_received(); notice != 0) {
        if (log) fmt::print(log, "dlx-launch: ticket {} was waiting for work when a notice (signal {}) came: "
                                 "exiting {} for a requeue\n", ticket, notice, env::kRequeueExitCode);
        return work;
      }
      if (throttled && std::chrono::steady_clock::now() - start >= hold) {
        if (const auto resume = yield_to(coordinator.state(), ticket, array_job)) {
          return yielded(*resume, ticket, fmt::format("while waiting ({})", work.reason), log);
        }
      }
    }
    // Trials that ended without a word would keep this ticket waiting (lost_trials.hpp).
    if (lost_trials.report_if_due(coordinator, experiment, ticket, log)) continue;  // ask again at once
    if (std::chrono::steady_clock::now() - start > limit) {
      throw LaunchError(fmt::format(
          "ticket {} waited {} s for work from the searcher ({}); giving up (raise "
          "DLX_WORK_WAIT_S in the experiment's environment, or requeue the task with scontrol "
          "requeue)", ticket, limit.count(), work.reason));
    }
    if (log && !said_wait) fmt::print(log, "dlx-launch: ticket {} waits: {}\n", ticket, work.reason);
    if (log) std::fflush(log);
    said_wait = true;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, throttled ? kThrottledPause : std::chrono::milliseconds(10000));
  }
}

void apply_searcher_work(const searcher::Work& work, const config::Experiment& experiment,
                         env::TrialEnvironment& trial, EnvVars& vars, std::FILE* log) {
  const auto& dir = *trial.experiment_dir;
  const auto ticket = trial.ticket.value_or(trial.trial_id);
  trial.trial_id = work.trial;
  trial.ticket = ticket;
  trial.hparams = config::nest_hyperparameters(work.hparams);
  trial.flat_hparams = work.hparams;
  trial.start_length = work.start_length;
  trial.target_length = work.target_length;
  trial.checkpoint_dir = store::checkpoint_dir(dir, work.trial);
  dlx::create_directories_with_mode(*trial.checkpoint_dir);  // as the user: dlx-launch is theirs

  // A requeued trial resumes its own newest checkpoint; a fresh piece of work starts from the one
  // the searcher named (which must exist: the trainer wrote it before it reported that length).
  const checkpoint::Expectation own{.experiment = experiment.name, .trial_id = work.trial};
  trial.latest_checkpoint = latest_valid_checkpoint(*trial.checkpoint_dir, own, log);
  if (!trial.latest_checkpoint && work.checkpoint_trial) {
    trial.latest_checkpoint = store::checkpoint_dir(dir, *work.checkpoint_trial) /
                              fmt::format("step-{}.h5", work.start_length);
  }

  vars.emplace_back("DLX_TRIAL_ID", std::to_string(work.trial));
  vars.emplace_back("DLX_TICKET", std::to_string(ticket));
  vars.emplace_back("DLX_HPARAMS", trial.hparams.dump());  // nested, as Determined passes them
  for (const auto& [name, value] : work.hparams.items()) {
    vars.emplace_back(config::hyperparameter_variable(name), config::hyperparameter_variable_value(value));
  }
  vars.emplace_back("DLX_CHECKPOINT_DIR", trial.checkpoint_dir->string());
  vars.emplace_back("DLX_START_LENGTH", std::to_string(work.start_length));
  vars.emplace_back("DLX_TARGET_LENGTH", std::to_string(work.target_length));
  // The unit of those lengths and the metric the searcher asks for, so that a training loop
  // (dlx.torch.Loop) counts and saves in the searcher's terms without parsing the experiment.
  const auto& searcher = experiment.searcher;
  const std::optional<config::Length> length =
      searcher.name == config::SearcherName::pbt ? std::optional(searcher.pbt.length_per_round)
                                                 : searcher.max_length;
  vars.emplace_back("DLX_LENGTH_UNIT", length ? config::to_string(length->unit) : "");
  vars.emplace_back("DLX_SEARCHER_METRIC", searcher.metric);
}

void tell_searcher_failed(const config::Experiment& experiment, const env::TrialEnvironment& trial,
                          const std::string& why) {
  try {
    searcher::Coordinator coordinator(experiment, *trial.experiment_dir / searcher::kJournalFileName);
    summary::write_summary_on_commit(coordinator, *trial.experiment_dir,
                                      fmt::format("dlx-launch, trial {}", trial.trial_id));
    coordinator.report_exit(static_cast<int>(trial.trial_id), searcher::ExitKind::failed, why);
  } catch (const std::exception& error) {
    fmt::print(stderr, "dlx-launch: warning: cannot tell the searcher that trial {} failed: {}\n",
               trial.trial_id, error.what());
  }
}

}  // namespace dlx::launch
