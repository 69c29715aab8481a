#include "trial_recorder.hpp"

#include <fmt/format.h>

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

TrialRecorder::TrialRecorder(const env::TrialEnvironment& environment,
                             std::string experiment_name, int world_size, std::string nodes)
    : path_(environment.record_path()) {
  std::filesystem::create_directories(path_.parent_path());
  if (auto existing = checkpoint::load_trial_record_if_exists(path_)) {
    record_ = std::move(*existing);
  } else {
    record_.experiment = std::move(experiment_name);
    record_.trial_id = environment.trial_id;
    record_.hparams = environment.hparams;
    record_.created_unix = unix_seconds_now();
  }
  record_.state = "running";
  record_.exit_code = 0;
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

void TrialRecorder::finish() {
  record_.state = "completed";
  record_.exit_code = 0;
  save();
}

void TrialRecorder::save() {
  record_.updated_unix = unix_seconds_now();
  checkpoint::save_trial_record(record_, path_);
}

}  // namespace dlx::detail
