// SPDX-License-Identifier: Apache-2.0
#include "dlx/export/export_experiment.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "dlx/common/host_name.hpp"
#include "dlx/export/tensorboard_events.hpp"
#include "dlx/export/tfrecord.hpp"

namespace dlx::tensorboard {
namespace {

namespace fs = std::filesystem;

// TensorBoard only reads files whose name contains "tfevents"; the rest of the name is the
// convention (creation time, host) with dlx as the suffix.
std::string event_file_name() {
  return fmt::format("events.out.tfevents.{}.{}.dlx", std::time(nullptr), host_name());
}

fs::path parent_of(const fs::path& output) {
  return output.parent_path().empty() ? fs::path(".") : output.parent_path();
}

// A directory beside `output` that nobody else uses: mkdtemp's name, in the same file system, so
// that the final rename is atomic.
fs::path make_staging_directory(const fs::path& output) {
  const auto parent = parent_of(output);
  std::string pattern = (parent / ("." + output.filename().string() + ".dlx-export-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    const int error_number = errno;
    throw Error(fmt::format("cannot write {}: cannot create a directory in {}: {} (choose an OUTDIR in a "
                            "directory you can write)", output.string(), parent.string(),
                            std::generic_category().message(error_number)));
  }
  // mkdtemp makes it 0700; an export is as readable as any directory the user makes.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  fs::permissions(pattern, static_cast<fs::perms>(0777 & ~mask));
  return pattern;
}

// Removes the staging directory (and, with it, everything written) unless the export completed.
class StagingGuard {
 public:
  explicit StagingGuard(fs::path path) : path_(std::move(path)) {}
  StagingGuard(const StagingGuard&) = delete;
  StagingGuard& operator=(const StagingGuard&) = delete;
  ~StagingGuard() {
    std::error_code ignored;  // nothing better to do in a destructor: the first error is reported
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }
  void release() { path_.clear(); }

 private:
  fs::path path_;
};

// About the size of one scalar event's TFRecord (16 bytes of framing, ~30 of Event): the
// stream's first reservation, so that growing it rarely copies.
constexpr std::size_t kRecordBytesGuess = 64;

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file) {
    const int error_number = errno;
    throw Error(fmt::format("cannot write {}: {} (is the file system full?)", path.string(),
                            std::generic_category().message(error_number)));
  }
}

// One event file: the file_version event first, then `events`.
void write_event_file(const fs::path& path, double wall_time, const std::vector<std::string>& events,
                      ExportSummary& summary) {
  std::string stream;
  append_tfrecord(stream, file_version_event(wall_time));
  for (const auto& event : events) append_tfrecord(stream, event);
  write_file(path, stream);
  summary.events += events.size() + 1;
  summary.bytes += stream.size();
}

// The staging directory becomes `output`. rename(2) replaces an empty directory; a non-empty one
// (with `replace`) is moved aside first and removed once the new one is in place.
void move_into_place(const fs::path& staging, const fs::path& output) {
  std::error_code error;
  if (fs::exists(fs::symlink_status(output, error)) && !fs::is_empty(output)) {
    const auto aside = fs::path(staging.string() + ".old");
    fs::rename(output, aside);
    try {
      fs::rename(staging, output);
    } catch (...) {
      fs::rename(aside, output, error);
      throw;
    }
    fs::remove_all(aside, error);
    return;
  }
  fs::rename(staging, output);
}

}  // namespace

fs::path output_directory(const std::string& typed) {
  fs::path path(typed);
  if (!path.has_filename()) path = path.parent_path();  // "runs/" -> "runs"
  const auto name = path.filename();
  if (name.empty() || name == "." || name == "..") {
    throw Error(fmt::format("OUTDIR '{}' has no name of its own (give a directory to create, e.g. {}/tensorboard)",
                            typed, typed.empty() ? "." : typed));
  }
  return path;
}

void check_output_directory(const fs::path& output, bool replace) {
  std::error_code error;
  if (!fs::is_directory(parent_of(output), error)) {
    throw Error(fmt::format("cannot write {}: its parent directory {} does not exist (create it first, or "
                            "choose another OUTDIR)", output.string(), parent_of(output).string()));
  }
  const auto status = fs::symlink_status(output, error);
  if (status.type() == fs::file_type::not_found) return;
  if (status.type() != fs::file_type::directory) {
    throw Error(fmt::format("{} exists and is not a directory (give a new or empty directory as OUTDIR)",
                            output.string()));
  }
  if (!replace && !fs::is_empty(output)) {
    throw Error(fmt::format("{} exists and is not empty (give a new or empty directory, or add --force to "
                            "replace it and everything in it)", output.string()));
  }
}

ExportSummary write_tensorboard_logs(const ExperimentToExport& experiment, const fs::path& output, bool replace) {
  check_output_directory(output, replace);
  const auto staging = make_staging_directory(output);
  StagingGuard guard(staging);

  ExportSummary summary;
  summary.output = output;
  const auto file_name = event_file_name();
  const auto root_event = experiment_event(experiment.name, experiment.searcher_metric, experiment.trials);
  write_event_file(staging / file_name, experiment_start(experiment.trials), {root_event}, summary);

  for (const auto& trial : experiment.trials) {
    const auto run = staging / fmt::format("trial-{}", trial.trial_id);
    if (!fs::create_directory(run)) {
      throw Error(fmt::format("two records of trial {} (each trial directory's trial.h5 must hold its own "
                              "trial)", trial.trial_id));
    }
    const auto fallback = static_cast<double>(trial.updated_unix);
    std::string stream;
    stream.reserve(kRecordBytesGuess * (trial.training.rows() + trial.validation.rows() + 3));
    append_tfrecord(stream, file_version_event(static_cast<double>(trial.created_unix)));
    append_tfrecord(stream, session_start_event(trial));
    std::size_t events = 3;  // file version, session start and end
    events += append_scalar_records(stream, trial.training, "training", fallback);
    events += append_scalar_records(stream, trial.validation, "validation", fallback);
    if (const auto found = experiment.system.find(trial.trial_id); found != experiment.system.end()) {
      for (const auto& series : found->second) {
        const auto& walls = series.samples.wall_times();
        const auto created = static_cast<double>(trial.created_unix);
        events += append_scalar_records(stream, series.samples, fmt::format("system/rank-{}", series.name.rank),
                                        fallback, [&](std::size_t row) {
                                          return static_cast<std::int64_t>(std::llround((walls[row] - created) * 1000));
                                        });
      }
    }
    append_tfrecord(stream, session_end_event(trial));
    write_file(run / file_name, stream);
    summary.events += events;
    summary.bytes += stream.size();
    ++summary.runs;
  }

  move_into_place(staging, output);
  guard.release();
  return summary;
}

}  // namespace dlx::tensorboard
