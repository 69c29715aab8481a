// load_trial_record: open read-only, check that this is a trial record of a format this build
// understands, then read every piece, naming whatever is missing or malformed.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "dlx/checkpoint/h5/attributes.hpp"
#include "dlx/checkpoint/h5/error.hpp"
#include "dlx/checkpoint/h5/objects.hpp"
#include "dlx/checkpoint/trial_record.hpp"
#include "layout.hpp"
#include "metric_table_io.hpp"
#include "restart_events_io.hpp"

namespace dlx::checkpoint {
namespace {

void require_readable_hdf5(const std::filesystem::path& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0)
    throw CheckpointError(fmt::format("{}: cannot read trial record: {} (errno {})", path.string(),
                                      std::strerror(errno), errno));
  if (S_ISDIR(status.st_mode)) h5::throw_format_error(path, "is a directory, not a trial record");
  if (h5::check_tri(H5Fis_hdf5(path.c_str()), path, "check the HDF5 signature") == 0)
    h5::throw_format_error(path, "not an HDF5 file (no HDF5 signature), so not a dlx trial record");
}

void check_format_version(hid_t root, const std::filesystem::path& path) {
  auto version = h5::read_int64_attribute(root, layout::kFormatVersion, path);
  if (version > TrialRecord::kFormatVersion)
    h5::throw_format_error(path, fmt::format("trial record format_version {} is newer than the "
                                             "newest this dlx reads ({}); upgrade dlx",
                                             version, TrialRecord::kFormatVersion));
  if (version < 1)
    h5::throw_format_error(path, fmt::format("invalid trial record format_version {}", version));
}

nlohmann::ordered_json read_hparams(hid_t root, const std::filesystem::path& path) {
  // hparams_json is authoritative (order, exact types); /hparams is its view for HDF5 tools.
  auto text = h5::read_string_attribute(root, layout::kHparamsJson, path);
  h5::open_group(root, layout::kHparamsGroup, path);
  auto hparams = nlohmann::ordered_json::parse(text, nullptr, false);
  if (hparams.is_discarded() || !hparams.is_object())
    h5::throw_format_error(path, "attribute 'hparams_json' of / is not a JSON object");
  return hparams;
}

TrialRecord read_record(hid_t file_id, const std::filesystem::path& path) {
  auto root = h5::open_root_group(file_id, path);
  check_format_version(root.get(), path);
  TrialRecord record;
  record.experiment = h5::read_string_attribute(root.get(), layout::kExperiment, path);
  record.trial_id = h5::read_int64_attribute(root.get(), layout::kTrialId, path);
  record.state = h5::read_string_attribute(root.get(), layout::kState, path);
  record.exit_code = h5::read_int_attribute(root.get(), layout::kExitCode, path);
  record.stop_reason = h5::read_string_attribute(root.get(), layout::kStopReason, path);
  record.restarts = h5::read_int_attribute(root.get(), layout::kRestarts, path);
  // Absent in records written before crashes were counted: none then.
  if (h5::has_attribute(root.get(), layout::kFailures, path))
    record.failures = h5::read_int_attribute(root.get(), layout::kFailures, path);
  record.world_size = h5::read_int_attribute(root.get(), layout::kWorldSize, path);
  record.nodes = h5::read_string_attribute(root.get(), layout::kNodes, path);
  record.slurm_job_id = h5::read_string_attribute(root.get(), layout::kSlurmJobId, path);
  record.hparams = read_hparams(root.get(), path);
  record.created_unix = h5::read_int64_attribute(root.get(), layout::kCreatedUnix, path);
  record.updated_unix = h5::read_int64_attribute(root.get(), layout::kUpdatedUnix, path);
  auto metrics = h5::open_group(root.get(), layout::kMetricsGroup, path);
  record.training = read_metric_table(metrics.get(), layout::kTrainingGroup, path);
  record.validation = read_metric_table(metrics.get(), layout::kValidationGroup, path);
  record.restart_events = read_restart_events(root.get(), path);
  if (h5::has_attribute(root.get(), layout::kStartedFromTrial, path)) {
    record.started_from = StartCheckpoint{
        h5::read_int64_attribute(root.get(), layout::kStartedFromTrial, path),
        h5::read_int64_attribute(root.get(), layout::kStartedFromStep, path),
        h5::read_string_attribute(root.get(), layout::kStartedFromPath, path)};
  }
  return record;
}

}  // namespace

TrialRecord load_trial_record(const std::filesystem::path& path) {
  h5::QuietErrors quiet;
  require_readable_hdf5(path);
  auto file = h5::open_file_read_only(path);  // fails here for a truncated or damaged file
  return read_record(file.get(), path);
}

std::optional<TrialRecord> load_trial_record_if_exists(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error) && !error) return std::nullopt;
  return load_trial_record(path);
}

}  // namespace dlx::checkpoint
