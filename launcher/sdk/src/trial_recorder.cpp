// SPDX-License-Identifier: Apache-2.0
#include "trial_recorder.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>

#include <fmt/format.h>

#include "dlx/common/directories.hpp"
#include "dlx/common/clock.hpp"
#include "dlx/env/notice_marker.hpp"
#include "dlx/slurm/job_time_left.hpp"
#include "notice_cause.hpp"

namespace dlx::detail {

const char* to_string(MetricKind kind) {
  return kind == MetricKind::training ? "training" : "validation";
}

std::string restart_cause(const std::string& stop_reason, const std::string& stop_cause) {
  if (!stop_cause.empty()) return stop_cause.substr(0, stop_cause.find(':'));
  if (stop_reason.starts_with("requeue")) return "notice";
  if (stop_reason.starts_with("crash")) return "crash";
  return "unknown";
}

std::int64_t last_reported_step(const record::TrialRecord& record) {
  std::int64_t last = 0;
  for (const auto* table : {&record.training, &record.validation}) {
    if (!table->empty()) last = std::max(last, table->steps().back());
  }
  return last;
}

struct TrialRecorder::Start {
  record::TrialRecord record;
  std::int64_t previous_update_unix = 0;
  std::int64_t previous_last_step = 0;
  bool restarted = false;
};

namespace {

// The last moment the previous run is known to have been alive: trial.h5's last rewrite, or a
// report after it (trial.h5 is rewritten only every few seconds).
std::int64_t last_sign_of_life(const record::TrialRecord& record) {
  double last = static_cast<double>(record.updated_unix);
  for (const auto* table : {&record.training, &record.validation})
    if (!table->empty() && std::isfinite(table->wall_times().back()))
      last = std::max(last, table->wall_times().back());
  return static_cast<std::int64_t>(last);
}

// Why the previous run ended, when it recorded no exit: a notice its rank 0's dlx-launch kept
// (notice_marker.hpp) means the trainer was killed before it could checkpoint; else nothing is
// known (a node failure, the job killed outright).
struct Unrecorded {
  std::string cause;
  std::string reason;
};

Unrecorded unrecorded_end(const record::TrialRecord& previous, const std::filesystem::path& trial_dir) {
  const auto marker = env::read_notice_marker(trial_dir);
  if (!marker || marker->slurm_job_id != previous.slurm_job_id || marker->restarts != previous.restarts) {
    return {"unknown", "no exit recorded (node failure, or killed)"};
  }
  const auto notice = classify_notice(marker->signal_number,
                                      slurm::time_left_from_end(marker->job_end, static_cast<std::time_t>(marker->unix_time)));
  const auto at = static_cast<std::time_t>(marker->unix_time);
  std::tm utc{};
  ::gmtime_r(&at, &utc);
  return {notice.cause,
          fmt::format("killed before it could checkpoint: a notice came at {:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z ({}) "
                      "and the run recorded no exit (a batch or a save longer than Slurm's time between the notice "
                      "and the kill)",
                      utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                      notice.detail)};
}

}  // namespace

TrialRecorder::TrialRecorder(const env::TrialEnvironment& environment,
                             std::string experiment_name, int world_size, std::string nodes,
                             MetricsPipelineOptions options)
    : TrialRecorder(
          [&] {
            dlx::create_directories_with_mode(environment.record_path().parent_path());
            Start start;
            auto& record = start.record;
            if (auto existing = record::load_trial_record_if_exists(environment.record_path())) {
              record = std::move(*existing);
            } else {
              record.experiment = std::move(experiment_name);
              record.trial_id = environment.trial_id;
              record.hparams = environment.flat_hparams;
              record.created_unix = unix_seconds_now();
            }
            start.previous_update_unix = last_sign_of_life(record);
            start.previous_last_step = last_reported_step(record);
            const auto now = unix_seconds_now();
            // A requeued run of a trial whose previous run did not end its work (a paused trial
            // resumed by a promotion is not one, whatever its array task's restart count).
            if (record.state == "running" && environment.restarts > record.restarts) {
              record::RestartEvent event;
              if (record.stop_reason.empty()) {
                auto unrecorded = unrecorded_end(record, environment.record_path().parent_path());
                event.cause = std::move(unrecorded.cause);
                event.reason = std::move(unrecorded.reason);
              } else {
                event.cause = restart_cause(record.stop_reason, record.stop_cause);
                event.reason = record.stop_reason;
                if (!record.stop_cause.empty()) event.reason += " (" + record.stop_cause + ")";
              }
              event.previous_nodes = record.nodes;  // before this run's replace them
              event.unix_time = now;
              // Until note_resume says from where: a run with no checkpoint to resume from starts
              // again from nothing, and all of the previous run's training was lost (from its start:
              // the previous restart's, else the record's creation, to its last sign of life).
              event.steps_lost = start.previous_last_step;
              const auto previous_start =
                  record.restart_events.empty() ? record.created_unix
                                                : std::max(record.created_unix, record.restart_events.back().unix_time);
              event.seconds_lost = static_cast<double>(
                  std::max<std::int64_t>(0, start.previous_update_unix - previous_start));
              event.downtime_seconds =
                  static_cast<double>(std::max<std::int64_t>(0, now - start.previous_update_unix));
              record.restart_events.push_back(std::move(event));
              start.restarted = true;
            }
            record.state = "running";
            record.exit_code = 0;
            record.stop_reason.clear();
            record.stop_cause.clear();
            record.restarts = environment.restarts;
            record.world_size = world_size;
            record.nodes = std::move(nodes);
            record.slurm_job_id = environment.slurm_job_id;
            return start;
          }(),
          environment.record_path(), options) {}

TrialRecorder::TrialRecorder(Start start, const std::filesystem::path& path,
                             MetricsPipelineOptions options)
    : previous_update_unix_(start.previous_update_unix),
      previous_last_step_(start.previous_last_step),
      restarted_(start.restarted),
      metrics_(path, std::move(start.record), options) {}

void TrialRecorder::report(MetricKind kind, std::int64_t step, const Metrics& metrics) {
  metrics_.report(kind == MetricKind::training ? record::MetricTableId::training
                                               : record::MetricTableId::validation,
                  step, metrics);
}

void TrialRecorder::report_values(MetricKind kind, std::int64_t step, std::span<const std::uint32_t> ids,
                                  std::span<const double> values) {
  metrics_.report_values(kind == MetricKind::training ? record::MetricTableId::training
                                                      : record::MetricTableId::validation,
                         step, ids, values);
}

void TrialRecorder::note_resume(std::int64_t step, std::int64_t checkpoint_unix) {
  metrics_.drop_from(step + 1);
  metrics_.commit([&](record::TrialRecord& record) {
    if (!restarted_) return;
    auto& event = record.restart_events.back();
    event.steps_lost = std::max<std::int64_t>(0, previous_last_step_ - step);
    event.resumed_step = step;
    event.seconds_lost =
        static_cast<double>(std::max<std::int64_t>(0, previous_update_unix_ - checkpoint_unix));
  });
}

void TrialRecorder::note_start(const record::StartCheckpoint& start) {
  metrics_.commit([&](record::TrialRecord& record) {
    // A requeue before its first own checkpoint: the same start.
    if (!record.started_from) record.started_from = start;
  });
}

void TrialRecorder::note_requeue_exit(const std::string& reason, int signal_number) {
  const auto cause = classify_notice(signal_number, job_time_left());
  metrics_.commit([&](record::TrialRecord& record) {
    record.stop_reason = reason;
    record.stop_cause = cause.cause + ": " + cause.detail;
    record.same_failures = 0;  // this run ended cleanly: the next crash starts a new count
  });
}

void TrialRecorder::note_hparam_warning(record::HparamWarning warning) {
  if (!warned_.emplace(warning.kind, warning.name).second) return;
  metrics_.commit([&](record::TrialRecord& record) { record::add_hparam_warning(record, std::move(warning)); });
}

void TrialRecorder::finish(const std::string& state, const std::string& reason) {
  metrics_.commit([&](record::TrialRecord& record) {
    record.state = state;
    record.exit_code = 0;
    record.stop_reason = reason;
  });
}

}  // namespace dlx::detail
