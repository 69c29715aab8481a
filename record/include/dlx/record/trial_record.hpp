// SPDX-License-Identifier: Apache-2.0
#pragma once
// trials/<id>/trial.h5: one trial's hyperparameters, metrics and outcome, for humans and HDF5 tools.
// Written only by the trial's rank 0 (and, after the trainer exited, by dlx-launch on rank 0: the
// two never overlap). Every save publishes a new file through temp + fsync + rename (the whole
// record, or a copy of the last file extended by the new rows: trial_record_writer.hpp), so a
// reader or a kill -9 never sees a half-written record. Layout (see docs/file-format.md):
//   /                      attrs: format_version, experiment, trial_id, state, exit_code,
//                                 stop_reason, stop_cause, restarts, world_size, nodes, slurm_job_id,
//                                 hparams_json, created_unix, updated_unix
//   /hparams               attrs: one per hyperparameter (int64, float64, string, or bool as int8;
//                          null, a list or a mapping as its JSON text)
//   /metrics/training      datasets: steps (int64), one float64 dataset per metric (NaN: absent)
//   /metrics/validation    same
//   (optional)             attrs of /: started_from ("trial 3 step 400"), started_from_trial,
//                                 started_from_step, started_from_path: the trial began from
//                                 another trial's checkpoint the searcher named (PBT)
//   /restart_events/<n>    attrs: one group per restart of the trial, n = 1, 2, ... (absent in
//                                 records without restarts): cause, reason, previous_nodes,
//                                 unix_time, resumed_step, steps_lost, seconds_lost,
//                                 downtime_seconds
//   (optional)             attrs of /: hparam_warnings (JSON: the trial's hyperparameter name
//                                 warnings), last_error and same_failures (the last crash, and
//                                 how many crashes in a row looked like it); absent: none
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlx/record/error.hpp"
#include "dlx/record/metric_table.hpp"

namespace dlx::record {

// One restart of the trial (a requeue after a preemption, a time limit, `scontrol requeue`, or
// a crash that max_restarts still allowed), recorded by the run that resumed.
struct RestartEvent {
  // How the previous run ended: "time_limit", "preemption" or "requeue" (checkpointed on a
  // notice and exited 85, the cause as that run could tell it: launcher/sdk/src/notice_cause.hpp),
  // "notice" (the same, cause not known; also every notice of records before format 3), "crash"
  // (counted against max_restarts), or "unknown" (the previous run recorded no exit: a node
  // failure, the job killed outright). A run killed after a notice it could not act on in time
  // records no exit either, but its rank 0's dlx-launch kept the notice
  // (launcher/env/include/dlx/env/notice_marker.hpp): its restart takes the notice's cause.
  std::string cause;
  std::string reason;  // the previous run's stop_reason, e.g. "crash: exit 137 (signal 9)"
  std::int64_t unix_time = 0;         // when the resumed run started
  std::int64_t resumed_step = 0;      // step of the checkpoint it resumed from (0: none)
  std::int64_t steps_lost = 0;        // reported steps after resumed_step that are redone
  double seconds_lost = 0;            // training time after that checkpoint, redone
  double downtime_seconds = 0;        // from the previous run's last record update to now
  std::string previous_nodes;  // the previous run's nodes, as its record said ("" before format 3)

  bool operator==(const RestartEvent&) const = default;
};

// A hyperparameter name the trainer and the experiment disagree on, as the trial's log said it
// (docs/sdk.md, "Hyperparameters"): kind "default", a name the trainer read with a default that
// the experiment does not define; kind "unread", a name the experiment defines that this trial
// has not read. Each (kind, name) is kept once.
struct HparamWarning {
  std::string kind;
  std::string name;     // dotted
  std::string message;  // the warning with its did-you-mean: "dlx: warning: hyperparameter ..."

  bool operator==(const HparamWarning&) const = default;
};

// The bounds writers keep and readers check (a file past them is refused as damaged or hostile).
inline constexpr std::size_t kMaxHparamWarnings = 64;
inline constexpr std::size_t kMaxHparamWarningNameBytes = 1024;
inline constexpr std::size_t kMaxHparamWarningBytes = 2048;
inline constexpr std::size_t kMaxLastErrorBytes = 1024;

// The checkpoint of another trial this trial started from (PBT: its member's previous trial, or
// the parent it exploits), as the searcher named it.
struct StartCheckpoint {
  std::int64_t trial_id = 0;
  std::int64_t step = 0;
  std::string path;

  bool operator==(const StartCheckpoint&) const = default;
};

struct TrialRecord {
  // 2: metric tables have wall_time; metrics reported since the file was written are in the
  // metrics log it names (dlx/record/metrics_log.hpp). 3: the metric tables' datasets are
  // chunked and extendible, so that the writer appends rows instead of rewriting them
  // (trial_record_writer.hpp). Formats 1 and 2 are still read.
  static constexpr int kFormatVersion = 3;

  std::string experiment;
  std::int64_t trial_id = 0;
  std::string state = "running";  // running | completed | failed
  int exit_code = 0;
  std::string stop_reason;
  // Why the run stopped on a notice, as it could tell (notice_cause.hpp: "time_limit: SIGUSR2
  // with 41 s left before the job's time limit"); "" when it did not stop on one.
  std::string stop_cause;
  int restarts = 0;
  int failures = 0;  // crashes so far (counted against the experiment's max_restarts)
  int world_size = 0;
  std::string nodes;  // comma-separated node names of the ranks, in rank order
  std::string slurm_job_id;
  nlohmann::ordered_json hparams = nlohmann::ordered_json::object();  // flat: name -> value
  std::int64_t created_unix = 0;
  std::int64_t updated_unix = 0;
  MetricTable training;
  MetricTable validation;
  std::vector<RestartEvent> restart_events;  // oldest first
  std::optional<StartCheckpoint> started_from;  // absent: started from scratch or its own
  // Hyperparameter name warnings (at most kMaxHparamWarnings; add_hparam_warning keeps them).
  std::vector<HparamWarning> hparam_warnings;
  // The last crash as dlx-launch saw it: "exit 1: ValueError: lr must be positive" (the exit and
  // the trainer's last error line, without the rank or node), kept across runs, and how many
  // consecutive crashes looked the same (dlx-launch stops restarting a crash loop).
  std::string last_error;
  int same_failures = 0;
  // The generation of the metrics log that continues this record (metrics.<G>.log beside
  // trial.h5; it need not exist yet). load_trial_record applies that log and the ones after it,
  // and returns the first generation it did not find: a writer that saves the loaded record
  // names that one, then retires the older logs (retire_metrics_logs).
  std::uint64_t metrics_log = 1;
};

inline constexpr const char* kTrialFileName = "trial.h5";

// Adds `warning` unless the record has one of that kind and name, or holds kMaxHparamWarnings
// already; the name and message are cut to their bounds. True when the record changed.
bool add_hparam_warning(TrialRecord& record, HparamWarning warning);

// `text` cut to at most `max_bytes` bytes at a UTF-8 character boundary, "..." ending a cut one.
std::string bounded_text(std::string text, std::size_t max_bytes);

// Durable whole-file save (temp + fsync + rename + directory fsync). Throws RecordError.
void save_trial_record(const TrialRecord& record, const std::filesystem::path& path);

// The record as readers see it: trial.h5 with the metrics logs that continue it applied (read
// again when trial.h5 is replaced meanwhile). Throws RecordError naming the file when it is
// unreadable or not a dlx trial record. The files are treated as hostile input: a symbolic link,
// a FIFO or a device at `path` is refused without being opened for reading (never waited on),
// soft and external links inside it are refused, and every dataset is checked against the
// file's size before it is read (docs/file-format.md, "Limits").
TrialRecord load_trial_record(const std::filesystem::path& path);
// trial.h5 alone, without the metrics logs (tests, and what HDF5 tools see).
TrialRecord load_trial_record_file(const std::filesystem::path& path);

// nullopt when nothing is at `path` (not even a dangling link); throws like load_trial_record
// otherwise.
std::optional<TrialRecord> load_trial_record_if_exists(const std::filesystem::path& path);

}  // namespace dlx::record
