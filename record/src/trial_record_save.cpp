// SPDX-License-Identifier: Apache-2.0
// save_trial_record and TrialRecordWriter: write the whole record to a temporary file beside the
// final one (or a copy of the writer's last file, extended: trial_record_writer.hpp), close it
// (HDF5 flushes everything), then publish it (fsync, rename, fsync the directory). Any failure
// removes the temporary file and leaves the previous record untouched.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "dlx/h5/attributes.hpp"
#include "dlx/h5/error.hpp"
#include "dlx/h5/objects.hpp"
#include "dlx/record/metrics_log.hpp"
#include "dlx/record/trial_record.hpp"
#include "dlx/record/trial_record_writer.hpp"
#include "dlx/common/error.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/h5/hparams.hpp"
#include "layout.hpp"
#include "metric_table_io.hpp"
#include "restart_events_io.hpp"
#include "trial_notes_io.hpp"

namespace dlx::record {
namespace {

void write_root_attributes(hid_t root, const TrialRecord& record, const std::string& hparams_json,
                           const std::filesystem::path& file) {
  using std::int32_t;
  h5::write_attribute(root, layout::kFormatVersion, int32_t{TrialRecord::kFormatVersion}, file);
  h5::write_attribute(root, layout::kExperiment, record.experiment, file);
  h5::write_attribute(root, layout::kTrialId, record.trial_id, file);
  h5::write_attribute(root, layout::kState, record.state, file);
  h5::write_attribute(root, layout::kExitCode, int32_t{record.exit_code}, file);
  h5::write_attribute(root, layout::kStopReason, record.stop_reason, file);
  h5::write_attribute(root, layout::kStopCause, record.stop_cause, file);
  h5::write_attribute(root, layout::kRestarts, int32_t{record.restarts}, file);
  h5::write_attribute(root, layout::kFailures, int32_t{record.failures}, file);
  h5::write_attribute(root, layout::kWorldSize, int32_t{record.world_size}, file);
  h5::write_attribute(root, layout::kNodes, record.nodes, file);
  h5::write_attribute(root, layout::kSlurmJobId, record.slurm_job_id, file);
  h5::write_attribute(root, layout::kHparamsJson, hparams_json, file);
  h5::write_attribute(root, layout::kCreatedUnix, record.created_unix, file);
  h5::write_attribute(root, layout::kUpdatedUnix, record.updated_unix, file);
  h5::write_attribute(root, layout::kMetricsLog, metrics_log_name(record.metrics_log), file);
  if (const auto& start = record.started_from) {  // only when there is one: older readers see none
    h5::write_attribute(root, layout::kStartedFrom,
                        fmt::format("trial {} step {}", start->trial_id, start->step), file);
    h5::write_attribute(root, layout::kStartedFromTrial, start->trial_id, file);
    h5::write_attribute(root, layout::kStartedFromStep, start->step, file);
    h5::write_attribute(root, layout::kStartedFromPath, start->path, file);
  }
  write_trial_notes(root, record, file);
}

// Every object handle is closed when this returns, so the file itself can then be closed.
void write_contents(hid_t file_id, const TrialRecord& record, const std::string& hparams_json,
                    const std::filesystem::path& file) {
  auto root = h5::open_root_group(file_id, file);
  write_root_attributes(root.get(), record, hparams_json, file);
  h5::write_hparams_group(root.get(), layout::kHparamsGroup, record.hparams, file);
  auto metrics = h5::create_group(root.get(), layout::kMetricsGroup, file);
  write_metric_table(metrics.get(), layout::kTrainingGroup, record.training, file);
  write_metric_table(metrics.get(), layout::kValidationGroup, record.validation, file);
  write_restart_events(root.get(), record.restart_events, file);
}

// The append's step 2 (trial_record_writer.hpp) on the open copy.
void extend_contents(hid_t file_id, const TrialRecord& head, const std::string& hparams_json,
                     const MetricTableChanges& training, const MetricTableChanges& validation,
                     const std::filesystem::path& file) {
  auto root = h5::open_root_group(file_id, file);
  h5::delete_attributes(root.get(), file);
  write_root_attributes(root.get(), head, hparams_json, file);
  auto metrics = h5::open_group(root.get(), layout::kMetricsGroup, file);
  append_metric_table(metrics.get(), layout::kTrainingGroup, training, file);
  append_metric_table(metrics.get(), layout::kValidationGroup, validation, file);
  write_restart_events(root.get(), head.restart_events, file);
}

// Runs `body` on a new temporary file beside the record; removes it on any failure, naming the
// record in the RecordError.
template <typename Body>
void with_temporary(const std::filesystem::path& path, Body&& body) {
  h5::QuietErrors quiet;
  auto temporary = temporary_path_for(path);
  try {
    body(temporary);
  } catch (const Error& e) {
    ::unlink(temporary.c_str());
    throw RecordError(fmt::format("cannot save trial record {}: {}", path.string(), e.what()));
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
}

}  // namespace

void TrialRecordWriter::publish(const std::filesystem::path& temporary) {
  // Kept open before the rename: the inode published, for the next append to copy.
  UniqueFd written(::open(temporary.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!written) throw SystemError("open " + temporary.string(), errno);
  publish_file(temporary, path_);
  written_ = std::move(written);
}

void TrialRecordWriter::write(const TrialRecord& record) {
  with_temporary(path_, [&](const std::filesystem::path& temporary) {
    auto hparams_json = h5::hparams_as_json(record.hparams);
    auto file = h5::create_file(temporary);
    write_contents(file.get(), record, hparams_json, temporary);
    file.close(temporary, "HDF5 file");
    publish(temporary);
  });
}

void TrialRecordWriter::append(const TrialRecord& head, const MetricTableChanges& training,
                               const MetricTableChanges& validation) {
  if (!written_) throw RecordError(fmt::format("cannot append to {}: this writer has not written it", path_.string()));
  with_temporary(path_, [&](const std::filesystem::path& temporary) {
    auto hparams_json = h5::hparams_as_json(head.hparams);
    auto file = h5::create_file_copy(temporary, written_.get());
    extend_contents(file.get(), head, hparams_json, training, validation, temporary);
    file.close(temporary, "HDF5 file");
    publish(temporary);
  });
}

void save_trial_record(const TrialRecord& record, const std::filesystem::path& path) {
  TrialRecordWriter(path).write(record);
}

}  // namespace dlx::record
