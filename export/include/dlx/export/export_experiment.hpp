// SPDX-License-Identifier: Apache-2.0
#pragma once
// Writes an experiment's TensorBoard log directory:
//   OUTDIR/events.out.tfevents.<unix>.<host>.dlx            the HParams experiment
//   OUTDIR/trial-<id>/events.out.tfevents.<unix>.<host>.dlx  one run per trial: scalars, session
// All of it is written into a temporary directory beside OUTDIR, which is renamed to OUTDIR at the
// end: an error leaves nothing behind (the temporary directory is removed), and a reader never
// sees a half-written export.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "dlx/record/system_series.hpp"
#include "dlx/record/trial_record.hpp"

namespace dlx::tensorboard {

struct ExperimentToExport {
  std::string name;
  std::string searcher_metric;  // the HParams dashboard lists validation/<it> first
  std::vector<record::TrialRecord> trials;
  // Each trial's system samples (dlx/record/system_series.hpp), by trial id; exported as
  // "system/rank-<R>/<series>" at step = milliseconds since the trial's creation.
  std::map<std::int64_t, std::vector<record::SystemSeries>> system;
};

struct ExportSummary {
  std::filesystem::path output;
  std::size_t runs = 0;     // trial directories
  std::size_t events = 0;   // in all files, file_version events included
  std::uintmax_t bytes = 0; // of all files
};

// OUTDIR as the user typed it, without a trailing "/" ("runs/" is "runs"); throws dlx::Error
// for a path with no name of its own ("/", ".", ".."), which cannot be renamed into place.
std::filesystem::path output_directory(const std::string& typed);

// Throws dlx::Error (what, where, how to fix) when OUTDIR's parent is missing, or OUTDIR exists
// and is not an empty directory (unless `replace`). Callers check before reading the experiment,
// so that a wrong OUTDIR is reported before minutes spent reading trials.
void check_output_directory(const std::filesystem::path& output, bool replace);

// Checks as above, then writes; throws dlx::Error also when OUTDIR's parent is not writable.
// With `replace`, an existing OUTDIR is replaced whole once the new one is complete.
ExportSummary write_tensorboard_logs(const ExperimentToExport& experiment, const std::filesystem::path& output,
                                     bool replace);

}  // namespace dlx::tensorboard
