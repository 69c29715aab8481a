// SPDX-License-Identifier: Apache-2.0
#pragma once
// The TensorBoard Events (serialized, ready for append_tfrecord) that show a dlx experiment:
// per trial, a run with its scalars and the HParams dashboard's session start and end; at the
// root, the HParams experiment (which hyperparameters and metrics the dashboard lists).
// The generated protobuf classes stay inside the library: callers see only bytes.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dlx/record/trial_record.hpp"

namespace dlx::tensorboard {

// The event that opens every event file: file_version "brain.Event:2".
std::string file_version_event(double wall_time);

// Appends to `stream`, as TFRecords, one event per row of `table` with every metric the row
// reported (NaN: not reported, left out), tagged "<group>/<metric>" ("training/loss"), at the
// row's step and wall time, or at `fallback_wall_time` where the row has none (records of
// format 1). Rows with no value left are skipped. Returns the number of events appended.
// One Event and one buffer serve every row: millions of rows cost no allocation each.
// `step_of`, when given, replaces each row's step (by row index): system samples are placed by
// time (bench_system_sample's rows number the samples of one run).
std::size_t append_scalar_records(std::string& stream, const record::MetricTable& table,
                                  const std::string& group, double fallback_wall_time,
                                  const std::function<std::int64_t(std::size_t row)>& step_of = {});

// "_hparams_/session_start_info": the trial's hyperparameters (strings, numbers, booleans as
// such), its group (one per trial) and start time.
std::string session_start_event(const record::TrialRecord& trial);

// "_hparams_/session_end_info": SUCCESS, FAILURE or RUNNING from the trial's state.
std::string session_end_event(const record::TrialRecord& trial);

// When the experiment started: its first trial's creation (unix seconds; 0 without trials).
double experiment_start(const std::vector<record::TrialRecord>& trials);

// "_hparams_/experiment": every hyperparameter of the trials with its type, and the metrics:
// validation/<searcher_metric> first, then every other training and validation metric.
std::string experiment_event(const std::string& experiment_name, const std::string& searcher_metric,
                             const std::vector<record::TrialRecord>& trials);

}  // namespace dlx::tensorboard
