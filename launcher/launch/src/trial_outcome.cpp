// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/trial_outcome.hpp"


#include <algorithm>
#include <array>
#include <cctype>
#include <csignal>
#include <filesystem>

#include <fmt/format.h>

#include "dlx/record/metrics_log.hpp"
#include "dlx/common/clock.hpp"
#include "dlx/common/directories.hpp"
#include "dlx/common/signal_name.hpp"

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

std::string_view trimmed(std::string_view text) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  return text;
}

bool is_warning(std::string_view line) {
  std::string lower(line);
  std::ranges::transform(lower, lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("warning:") != std::string::npos;
}

}  // namespace

bool is_python_compile_error(int exit_status, std::string_view error) {
  constexpr std::string_view kExit = "exit 1: ";
  if (exit_status != 1 || !error.starts_with(kExit)) return false;
  const auto line = error.substr(kExit.size());
  return std::ranges::any_of(std::array<std::string_view, 3>{"SyntaxError:", "IndentationError:", "TabError:"},
                             [&](std::string_view kind) { return line.starts_with(kind); });
}

bool should_mark_failed(int exit_status, const std::optional<record::TrialRecord>& record) {
  if (exit_status == 0 || exit_status == env::kRequeueExitCode) return false;
  return !record || record->state == "running";
}

bool finished_during_run(int exit_status, const std::optional<record::TrialRecord>& record_at_start,
                         const std::optional<record::TrialRecord>& record_now) {
  const auto finished = [](const std::optional<record::TrialRecord>& record) {
    return record && (record->state == "completed" || record->state == "stopped" || record->state == "paused");
  };
  return exit_status != 0 && exit_status != env::kRequeueExitCode && finished(record_now) && !finished(record_at_start);
}

std::string exit_after_finish_warning(int exit_status, std::string_view state, std::string_view last_line) {
  auto text = fmt::format("dlx-launch: warning: the trainer was {} after its trial was {}", describe_exit(exit_status),
                          state);
  if (!last_line.empty()) text += fmt::format(" ('{}')", last_line);
  text += fmt::format(
      ": the trial's metrics and checkpoints are complete, so this is not counted as a crash and dlx-launch exits 0. "
      "An abort at exit usually means a library's thread was still running as the process ended (a "
      "torch.distributed process group that was never destroyed: call "
      "torch.distributed.destroy_process_group() at the end of training)");
  return text;
}

// PyTorch 2.x prefixes each line of an uncaught exception in a process with a process group with
// "[rank<R>]: " (init_process_group's excepthook): the same error reads differently on each rank,
// and which rank's crash the trial takes varies, so a crash loop would never look like one.
// Where the crash happened is said apart ("rank 1 on n1").
namespace {
std::string_view without_torch_rank_prefix(std::string_view line) {
  if (!line.starts_with("[rank")) return line;
  const auto digits_end = line.find_first_not_of("0123456789", 5);
  if (digits_end == 5 || digits_end == std::string_view::npos || line.substr(digits_end, 2) != "]:") return line;
  return trimmed(line.substr(digits_end + 2));
}
}  // namespace

std::string last_error_line(std::string_view tail) {
  while (!tail.empty()) {
    const auto end = tail.find_last_not_of('\n');
    if (end == std::string_view::npos) break;
    tail = tail.substr(0, end + 1);
    const auto start = tail.rfind('\n');
    const auto line = without_torch_rank_prefix(trimmed(start == std::string_view::npos ? tail : tail.substr(start + 1)));
    tail = start == std::string_view::npos ? std::string_view() : tail.substr(0, start);
    if (line.empty() || line.starts_with("dlx-launch:") || is_warning(line)) continue;
    return std::string(line);
  }
  return "";
}

std::string describe_exit(int exit_status) {
  if (exit_status > 128 && exit_status < 128 + 65) {
    const int signal_number = exit_status - 128;
    return fmt::format("killed by {} (exit {})", signal_name(signal_number), exit_status);
  }
  return fmt::format("exit {}", exit_status);
}

std::string crash_error(int exit_status, std::string_view last_line, std::string_view cause) {
  auto text = describe_exit(exit_status);
  if (exit_status == 128 + SIGKILL) {
    if (!cause.empty()) text += fmt::format(": {}", cause);
  } else {
    if (!last_line.empty()) text += fmt::format(": {}", last_line);
    if (!cause.empty()) text += fmt::format("{} {}", last_line.empty() ? ":" : ";", cause);
  }
  return record::bounded_text(std::move(text), record::kMaxLastErrorBytes);
}

ExitDecision decide_exit(int exit_status, const std::optional<record::TrialRecord>& record_at_start,
                         std::optional<int> max_restarts, std::string_view error) {
  using Final = ExitDecision::Final;
  ExitDecision decision{.status = exit_status};
  if (!should_mark_failed(exit_status, record_at_start)) return decision;
  decision.crash = true;
  const int failures = record_at_start ? record_at_start->failures : 0;
  const bool same = record_at_start && !error.empty() && record_at_start->last_error == error;
  decision.same_failures = same ? record_at_start->same_failures + 1 : 1;
  if (exit_status == env::kConfigErrorExitCode) {
    decision.final = Final::config_error;
  } else if (is_python_compile_error(exit_status, error)) {
    decision.final = Final::code_error;
  } else if (!max_restarts || failures >= *max_restarts) {
    decision.final = Final::restarts_exhausted;
  } else if (decision.same_failures >= kSameCrashLimit) {
    decision.final = Final::crash_loop;
  } else {
    decision.requeue = true;
    decision.status = env::kRequeueExitCode;
  }
  return decision;
}

ExitDecision decide_exit(const TrialCrash& crash, const std::optional<record::TrialRecord>& record_at_start,
                         std::optional<int> max_restarts) {
  if (crash.refused) {
    return {.status = 1, .crash = true, .final = ExitDecision::Final::restarts_exhausted, .same_failures = 1};
  }
  auto decision = decide_exit(crash.status, record_at_start, max_restarts, crash.error);
  if (decision.crash && !crash.snapshot_gap.empty() && decision.final != ExitDecision::Final::config_error) {
    decision.final = ExitDecision::Final::snapshot_gap;
    decision.requeue = false;
    decision.status = crash.status;
  }
  return decision;
}

std::string crash_stop_reason(const TrialCrash& crash, const ExitDecision& decision, int failures,
                              std::optional<int> max_restarts) {
  using Final = ExitDecision::Final;
  const auto what = crash.described();
  if (crash.refused) return fmt::format("failed: {}", what);
  switch (decision.final) {
    case Final::no: {
      auto reason = fmt::format("crash: {}; restart {} of max_restarts {}", what, failures, max_restarts.value_or(0));
      if (decision.same_failures > 1) {
        reason += fmt::format(" (the same crash {} times in a row; at {} it is not restarted)", decision.same_failures,
                              kSameCrashLimit);
      }
      return reason;
    }
    case Final::config_error:
      return fmt::format("failed: {} (exit {}: an error in the trial's code or configuration, not restarted)", what,
                         env::kConfigErrorExitCode);
    case Final::code_error:
      return fmt::format("failed: {} (Python could not compile the trainer's code: a restart would fail alike, so "
                         "it is not restarted; `dlx logs` shows the file and line)",
                         what);
    case Final::snapshot_gap:
      return fmt::format("failed: {} ({}; trials run a copy of the snapshot, so a restart would fail alike: not "
                         "restarted)", what, crash.snapshot_gap);
    case Final::crash_loop:
      return fmt::format("failed: the same crash {} times in a row, not restarted again (max_restarts {} "
                         "would only repeat it): {}",
                         decision.same_failures, max_restarts.value_or(0), what);
    case Final::restarts_exhausted:
      break;
  }
  return max_restarts ? fmt::format("failed: crash {} is past max_restarts {}; last error: {}", failures,
                                    *max_restarts, what)
                      : fmt::format("failed: {}", what);
}

bool record_trainer_exit(env::TrialContext& context, const TrialCrash& crash, const ExitDecision& decision,
                         std::optional<int> max_restarts) {
  if (!context.in_trial() || !decision.crash) return false;
  const auto path = context.trial().record_path();
  auto record = record::load_trial_record_if_exists(path);
  if (record && record->state != "running") return false;  // finished: a late crash is noise
  if (!record) {
    dlx::create_directories_with_mode(path.parent_path());
    record = new_record(context);
  }
  record->failures += 1;
  record->exit_code = crash.status;
  record->last_error = crash.error;
  record->same_failures = decision.same_failures;
  record->stop_reason = crash_stop_reason(crash, decision, record->failures, max_restarts);
  if (!decision.requeue) record->state = "failed";
  record->updated_unix = unix_seconds_now();
  // The loaded record holds the metrics logs too (the trainer has exited: nothing appends to
  // them now): it names the first generation after them, and they can go.
  record::save_trial_record(*record, path);
  record::retire_metrics_logs(path.parent_path(), record->metrics_log);
  return true;
}

}  // namespace dlx::launch
