#include "trial_recorder.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "dlx/common/directories.hpp"
#include "dlx/common/clock.hpp"

namespace dlx::detail {

const char* to_string(MetricKind kind) {
  return kind == MetricKind::training ? "training" : "validation";
}

void drop_rows_from(checkpoint::MetricTable& table, std::int64_t step) {
  std::size_t keep = 0;
  while (keep < table.steps.size() && table.steps[keep] < step) ++keep;
  table.steps.resize(keep);
  for (auto& [name, column] : table.columns) column.resize(keep);
}

std::string restart_cause(const std::string& stop_reason) {
  if (stop_reason.starts_with("requeue")) return "notice";
  if (stop_reason.starts_with("crash")) return "crash";
  return "unknown";
}

std::int64_t last_reported_step(const checkpoint::TrialRecord& record) {
  std::int64_t last = 0;
  for (const auto* table : {&record.training, &record.validation}) {
    if (!table->steps.empty()) last = std::max(last, table->steps.back());
  }
  return last;
}

TrialRecorder::TrialRecorder(const env::TrialEnvironment& environment,
                             std::string experiment_name, int world_size, std::string nodes)
    : path_(environment.record_path()) {
  dlx::create_directories_with_mode(path_.parent_path());
  if (auto existing = checkpoint::load_trial_record_if_exists(path_)) {
    record_ = std::move(*existing);
  } else {
    record_.experiment = std::move(experiment_name);
    record_.trial_id = environment.trial_id;
    record_.hparams = environment.hparams;
    record_.created_unix = unix_seconds_now();
  }
  previous_update_unix_ = record_.updated_unix;
  const auto now = unix_seconds_now();
  if (environment.restarts > record_.restarts) {  // a requeued run of an existing trial
    checkpoint::RestartEvent event;
    event.cause = restart_cause(record_.stop_reason);
    event.reason = record_.stop_reason.empty() ? "no exit recorded (node failure, or killed)"
                                               : record_.stop_reason;
    event.unix_time = now;
    event.steps_lost = last_reported_step(record_);  // until note_resume says from where
    event.downtime_seconds = static_cast<double>(std::max<std::int64_t>(0, now - previous_update_unix_));
    record_.restart_events.push_back(std::move(event));
    restarted_ = true;
  }
  record_.state = "running";
  record_.exit_code = 0;
  record_.stop_reason.clear();
  record_.restarts = environment.restarts;
  record_.world_size = world_size;
  record_.nodes = std::move(nodes);
  record_.slurm_job_id = environment.slurm_job_id;
  save();
}

void TrialRecorder::report(MetricKind kind, std::int64_t step, const Metrics& metrics) {
  auto& table = kind == MetricKind::training ? record_.training : record_.validation;
  if (!table.steps.empty() && step <= table.steps.back()) drop_rows_from(table, step);
  table.append(step, metrics);
  save();
}

void TrialRecorder::note_resume(std::int64_t step, std::int64_t checkpoint_unix) {
  const std::int64_t reported = last_reported_step(record_);
  if (restarted_) {
    auto& event = record_.restart_events.back();
    event.resumed_step = step;
    event.steps_lost = std::max<std::int64_t>(0, reported - step);
    event.seconds_lost =
        static_cast<double>(std::max<std::int64_t>(0, previous_update_unix_ - checkpoint_unix));
  }
  drop_rows_from(record_.training, step + 1);
  drop_rows_from(record_.validation, step + 1);
  save();
}

void TrialRecorder::note_start(const checkpoint::StartCheckpoint& start) {
  if (record_.started_from) return;  // a requeue before its first own checkpoint: the same start
  record_.started_from = start;
  save();
}

void TrialRecorder::note_requeue_exit(const std::string& reason) {
  record_.stop_reason = reason;
  save();
}

void TrialRecorder::finish(const std::string& state, const std::string& reason) {
  record_.state = state;
  record_.exit_code = 0;
  record_.stop_reason = reason;
  save();
}

void TrialRecorder::save() {
  record_.updated_unix = unix_seconds_now();
  checkpoint::save_trial_record(record_, path_);
}

}  // namespace dlx::detail
