// SPDX-License-Identifier: Apache-2.0
// load_trial_record: open read-only (a regular file only, never a link in its place), check that
// this is a trial record of a format this build understands, then read every piece, naming
// whatever is missing or malformed. The file is input like any other: groups and datasets are
// reached through hard links only, each once, and every dataset is checked against the file
// before it is read (h5/read_guard.hpp, h5::stored_extent).
#include <sys/stat.h>

#include <fmt/format.h>

#include "dlx/record/metrics_log.hpp"
#include "dlx/record/trial_record.hpp"
#include "dlx/h5/attributes.hpp"
#include "dlx/h5/error.hpp"
#include "dlx/h5/objects.hpp"
#include "dlx/h5/read_guard.hpp"
#include "h5_boundary.hpp"
#include "dlx/h5/hparams.hpp"
#include "layout.hpp"
#include "metric_table_io.hpp"
#include "restart_events_io.hpp"
#include "trial_notes_io.hpp"

namespace dlx::record {
namespace {

std::int64_t check_format_version(hid_t root, const std::filesystem::path& path) {
  auto version = h5::read_int64_attribute(root, layout::kFormatVersion, path);
  if (version > TrialRecord::kFormatVersion)
    h5::throw_format_error(path, fmt::format("trial record format_version {} is newer than the "
                                             "newest this dlx reads ({}); upgrade dlx",
                                             version, TrialRecord::kFormatVersion));
  if (version < 1)
    h5::throw_format_error(path, fmt::format("invalid trial record format_version {}", version));
  return version;
}

// A string attribute of /, its bytes counted against the file's size.
std::string read_text(hid_t root, const char* name, h5::ReadGuard& guard) {
  auto value = h5::read_string_attribute(root, name, guard.file());
  guard.take(value.size(), fmt::format("attribute '{}' of /", name));
  return value;
}

nlohmann::ordered_json read_hparams(hid_t root, h5::ReadGuard& guard) {
  // hparams_json is authoritative (order, exact types); /hparams is its view for HDF5 tools.
  auto text = read_text(root, layout::kHparamsJson, guard);
  h5::open_group_member(root, "/", layout::kHparamsGroup, guard);
  return h5::parse_hparams_json(text, guard.file());
}

TrialRecord read_record(hid_t file_id, h5::ReadGuard& guard) {
  const auto& path = guard.file();
  auto root = h5::open_root(file_id, guard);
  const auto version = check_format_version(root.get(), path);
  TrialRecord record;
  record.experiment = read_text(root.get(), layout::kExperiment, guard);
  record.trial_id = h5::read_int64_attribute(root.get(), layout::kTrialId, path);
  record.state = read_text(root.get(), layout::kState, guard);
  record.exit_code = h5::read_int_attribute(root.get(), layout::kExitCode, path);
  record.stop_reason = read_text(root.get(), layout::kStopReason, guard);
  if (h5::has_attribute(root.get(), layout::kStopCause, path))  // format 3
    record.stop_cause = read_text(root.get(), layout::kStopCause, guard);
  record.restarts = h5::read_int_attribute(root.get(), layout::kRestarts, path);
  // Absent in records written before crashes were counted: none then.
  if (h5::has_attribute(root.get(), layout::kFailures, path))
    record.failures = h5::read_int_attribute(root.get(), layout::kFailures, path);
  record.world_size = h5::read_int_attribute(root.get(), layout::kWorldSize, path);
  record.nodes = read_text(root.get(), layout::kNodes, guard);
  record.slurm_job_id = read_text(root.get(), layout::kSlurmJobId, guard);
  record.hparams = read_hparams(root.get(), guard);
  record.created_unix = h5::read_int64_attribute(root.get(), layout::kCreatedUnix, path);
  record.updated_unix = h5::read_int64_attribute(root.get(), layout::kUpdatedUnix, path);
  const auto metrics_path = h5::child_path("/", layout::kMetricsGroup);
  auto metrics = h5::open_group_member(root.get(), "/", layout::kMetricsGroup, guard);
  record.training =
      read_metric_table(metrics.get(), metrics_path, layout::kTrainingGroup, guard, version);
  record.validation =
      read_metric_table(metrics.get(), metrics_path, layout::kValidationGroup, guard, version);
  if (version >= 2) {
    const auto name = read_text(root.get(), layout::kMetricsLog, guard);
    const auto generation = metrics_log_generation(name);
    if (!generation)
      h5::throw_format_error(path, fmt::format("attribute '{}' of / is '{}', not a metrics log "
                                               "name (metrics.<generation>.log)",
                                               layout::kMetricsLog, name));
    record.metrics_log = *generation;
  }
  record.restart_events = read_restart_events(root.get(), guard);
  if (h5::has_attribute(root.get(), layout::kStartedFromTrial, path)) {
    record.started_from = StartCheckpoint{
        h5::read_int64_attribute(root.get(), layout::kStartedFromTrial, path),
        h5::read_int64_attribute(root.get(), layout::kStartedFromStep, path),
        read_text(root.get(), layout::kStartedFromPath, guard)};
  }
  read_trial_notes(root.get(), record, guard);
  return record;
}

}  // namespace

TrialRecord load_trial_record_file(const std::filesystem::path& path) {
  return detail::h5_call([&] {
    // dlx writes trial.h5 as a regular file (temporary + rename): a symbolic link in its place
    // was put there by someone else, and is not followed.
    auto opened = h5::open_regular_file(path, h5::Symlinks::refuse, detail::kTrialRecordKind);
    h5::ReadGuard guard(path, opened.bytes, detail::kTrialRecordKind);
    return read_record(opened.file.get(), guard);
  });
}

TrialRecord load_trial_record(const std::filesystem::path& path) {
  // The protocol of dlx/record/metrics_log.hpp: trial.h5, then the logs that continue it. A
  // compaction that renames a new trial.h5 over this one and unlinks a log this read needed
  // shows as a trial.h5 with another inode afterwards: read again (a writer compacts at most
  // every few seconds, so a few tries always find a quiet moment).
  constexpr int kTries = 20;
  for (int attempt = 1;; ++attempt) {
    struct stat before {};
    const bool identified = ::stat(path.c_str(), &before) == 0;
    auto record = load_trial_record_file(path);
    record.metrics_log = apply_metrics_logs(path.parent_path(), record.metrics_log, record);
    struct stat after {};
    const bool unchanged = identified && ::stat(path.c_str(), &after) == 0 &&
                           after.st_ino == before.st_ino && after.st_dev == before.st_dev;
    if (unchanged || attempt == kTries) return record;
  }
}

std::optional<TrialRecord> load_trial_record_if_exists(const std::filesystem::path& path) {
  std::error_code error;
  // symlink_status: a link (even a dangling one) is there, and load_trial_record refuses it.
  if (std::filesystem::symlink_status(path, error).type() == std::filesystem::file_type::not_found)
    return std::nullopt;
  return load_trial_record(path);
}

}  // namespace dlx::record
