// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/trial_outcome.hpp"

#include <string.h>

#include <filesystem>

#include <fmt/format.h>

#include "dlx/record/metrics_log.hpp"
#include "dlx/common/clock.hpp"
#include "dlx/common/directories.hpp"

namespace dlx::launch {

namespace {

// A record for a trainer that died before libdlx created one (or that does not use libdlx).
record::TrialRecord new_record(env::TrialContext& context) {
  const auto& trial = context.trial();
  const auto& placement = context.placement();
  record::TrialRecord record;
  record.experiment = context.experiment_name();
  record.trial_id = trial.trial_id;
  record.restarts = trial.restarts;
  record.world_size = placement.world_size;
  record.nodes = placement.node_name;  // only rank 0's node is known here
  record.slurm_job_id = trial.slurm_job_id;
  record.hparams = trial.flat_hparams;
  record.created_unix = unix_seconds_now();
  return record;
}

}  // namespace

bool should_mark_failed(int exit_status, const std::optional<record::TrialRecord>& record) {
  if (exit_status == 0 || exit_status == env::kRequeueExitCode) return false;
  return !record || record->state == "running";
}

ExitDecision decide_exit(int exit_status, const std::optional<record::TrialRecord>& record_at_start,
                         std::optional<int> max_restarts) {
  ExitDecision decision{.status = exit_status};
  if (!should_mark_failed(exit_status, record_at_start)) return decision;
  decision.crash = true;
  const int failures = record_at_start ? record_at_start->failures : 0;
  if (max_restarts && failures < *max_restarts) {
    decision.requeue = true;
    decision.status = env::kRequeueExitCode;
  }
  return decision;
}

std::string describe_exit(int exit_status) {
  if (exit_status > 128 && exit_status < 128 + 65) {
    const int signal_number = exit_status - 128;
    const char* name = ::sigabbrev_np(signal_number);
    return name ? fmt::format("killed by SIG{} (exit {})", name, exit_status)
                : fmt::format("killed by signal {} (exit {})", signal_number, exit_status);
  }
  return fmt::format("exit {}", exit_status);
}

bool record_trainer_exit(env::TrialContext& context, int exit_status, std::string_view what,
                         const ExitDecision& decision, std::optional<int> max_restarts) {
  if (!context.in_trial() || !decision.crash) return false;
  const auto path = context.trial().record_path();
  auto record = record::load_trial_record_if_exists(path);
  if (!should_mark_failed(exit_status, record)) return false;
  if (!record) {
    dlx::create_directories_with_mode(path.parent_path());
    record = new_record(context);
  }
  record->failures += 1;
  record->exit_code = exit_status;
  if (decision.requeue) {
    record->stop_reason = fmt::format("crash: {}; restart {} of max_restarts {}", what,
                                      record->failures,
                                      max_restarts.value_or(0));
  } else {
    record->state = "failed";
    record->stop_reason =
        max_restarts ? fmt::format("failed: crash {} is past max_restarts {}; last error: {}",
                                   record->failures, *max_restarts, what)
                     : fmt::format("failed: {}", what);
  }
  record->updated_unix = unix_seconds_now();
  // The loaded record holds the metrics logs too (the trainer has exited: nothing appends to
  // them now): it names the first generation after them, and they can go.
  record::save_trial_record(*record, path);
  record::retire_metrics_logs(path.parent_path(), record->metrics_log);
  return true;
}

}  // namespace dlx::launch
