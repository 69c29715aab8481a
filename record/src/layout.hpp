// SPDX-License-Identifier: Apache-2.0
#pragma once
// Names in trial.h5 (docs/file-format.md), shared by the writer and the reader.
namespace dlx::record::layout {

inline constexpr const char* kHparamsGroup = "hparams";
inline constexpr const char* kMetricsGroup = "metrics";
inline constexpr const char* kTrainingGroup = "training";
inline constexpr const char* kValidationGroup = "validation";
inline constexpr const char* kStepsDataset = "steps";
inline constexpr const char* kWallTimeDataset = "wall_time";  // format 2
inline constexpr const char* kRestartEventsGroup = "restart_events";
// A metric's dataset is named after it, with U+2215 (DIVISION SLASH, "∕") for each '/': HDF5 reads
// '/' as a path, and TensorBoard-style names ("train/loss") are common. metric_name_problem
// refuses U+2215 in a name, so a dataset's name reads back as exactly one metric's.
inline constexpr const char* kSlashInDatasetNames = "\u2215";

inline constexpr const char* kFormatVersion = "format_version";
inline constexpr const char* kExperiment = "experiment";
inline constexpr const char* kTrialId = "trial_id";
inline constexpr const char* kState = "state";
inline constexpr const char* kExitCode = "exit_code";
inline constexpr const char* kStopReason = "stop_reason";
inline constexpr const char* kStopCause = "stop_cause";  // format 3
inline constexpr const char* kRestarts = "restarts";
inline constexpr const char* kFailures = "failures";
inline constexpr const char* kWorldSize = "world_size";
inline constexpr const char* kNodes = "nodes";
inline constexpr const char* kSlurmJobId = "slurm_job_id";
inline constexpr const char* kHparamsJson = "hparams_json";
inline constexpr const char* kCreatedUnix = "created_unix";
inline constexpr const char* kUpdatedUnix = "updated_unix";
inline constexpr const char* kMetricsLog = "metrics_log";  // format 2: "metrics.<G>.log"
inline constexpr const char* kStartedFrom = "started_from";
inline constexpr const char* kStartedFromTrial = "started_from_trial";
inline constexpr const char* kStartedFromStep = "started_from_step";
inline constexpr const char* kStartedFromPath = "started_from_path";
inline constexpr const char* kHparamWarnings = "hparam_warnings";  // optional
inline constexpr const char* kLastError = "last_error";            // optional
inline constexpr const char* kSameFailures = "same_failures";      // optional

}  // namespace dlx::record::layout
