// SPDX-License-Identifier: Apache-2.0
// write_experiment_summary: the whole file at a temporary name beside experiment.h5, closed (HDF5
// flushes everything), then published (fsync, rename, directory fsync). Any failure removes the
// temporary file and leaves the previous experiment.h5 as it was.
#include <unistd.h>

#include <ctime>

#include <fmt/format.h>

#include "dlx/h5/attributes.hpp"
#include "dlx/h5/error.hpp"
#include "dlx/h5/objects.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/config/snapshot.hpp"
#include "dlx/summary/experiment_summary.hpp"
#include "dlx/store/experiment_layout.hpp"
#include "summary_code.hpp"
#include "summary_tables.hpp"

namespace dlx::summary {


namespace {

constexpr const char* kMissingValues =
    "integers: -1 where there is none (ticket, rung, rank, peers, keep, best_length); "
    "metrics: NaN where there is none; strings: empty";

// The frozen experiment.yaml as the user's tools see it; the same text re-emitted when the
// directory has none (a test's or a tool's scratch directory).
std::string frozen_yaml(const std::filesystem::path& experiment_dir, const config::Experiment& experiment) {
  const auto path = experiment_dir / "experiment.yaml";
  std::error_code error;
  if (std::filesystem::exists(path, error)) return read_small_file(path, 16 << 20);
  return config::to_yaml(experiment);
}

void write_root_attributes(hid_t root, const searcher::SearchState& state, std::uint64_t journal_end, const std::string& writer,
                           const std::filesystem::path& file) {
  const auto& experiment = state.experiment();
  const auto best = state.best_trial();
  h5::write_attribute(root, "format_version", std::int32_t{kExperimentSummaryFormatVersion}, file);
  h5::write_attribute(root, "experiment", experiment.name, file);
  h5::write_attribute(root, "searcher", std::string(config::to_string(experiment.searcher.name)), file);
  h5::write_attribute(root, "sampler", std::string(config::to_string(experiment.searcher.sampler)), file);
  h5::write_attribute(root, "metric", experiment.searcher.metric, file);
  h5::write_flag_attribute(root, "smaller_is_better", experiment.searcher.smaller_is_better, file);
  h5::write_attribute(root, "seed", std::uint64_t{experiment.seed}, file);
  h5::write_attribute(root, "best_trial", std::int64_t{best ? *best : -1}, file);
  h5::write_attribute(root, "trials", static_cast<std::int64_t>(state.trials().size()), file);
  h5::write_attribute(root, "decisions", static_cast<std::int64_t>(state.decisions().size()), file);
  h5::write_attribute(root, "journal_bytes", std::uint64_t{journal_end}, file);
  h5::write_attribute(root, "written_unix", static_cast<std::int64_t>(std::time(nullptr)), file);
  h5::write_attribute(root, "written_by", writer, file);
  h5::write_attribute(root, "missing_values", std::string(kMissingValues), file);
  h5::write_attribute(root, "source_of_truth",
                      std::string("the journal beside this file; this file reflects its first journal_bytes bytes "
                                  "(`dlx replay --write-h5 DIR` rewrites it)"),
                      file);
}

void write_contents(hid_t file_id, const std::filesystem::path& experiment_dir, const searcher::SearchState& state,
                    std::uint64_t journal_end, const std::string& writer, const std::filesystem::path& file) {
  auto root = h5::open_root_group(file_id, file);
  write_root_attributes(root.get(), state, journal_end, writer, file);
  {
    auto config = h5::create_group(root.get(), "config", file);
    detail::write_text(config.get(), "experiment_yaml", frozen_yaml(experiment_dir, state.experiment()), file);
    detail::write_table(config.get(), "search_space", detail::search_space_table(state.experiment()), file);
  }
  detail::write_code_group(root.get(), experiment_dir, file);
  detail::write_table(root.get(), "trials", detail::trial_table(state), file);
  detail::write_table(root.get(), "decisions", detail::decision_table(state), file);
  auto links = h5::create_group(root.get(), "trial_files", file);
  for (const auto& [id, trial] : state.trials()) {
    // Relative to experiment.h5's directory, so the experiment directory can be moved or copied.
    const auto target = store::trial_record_path(experiment_dir, id).lexically_relative(experiment_dir);
    detail::write_external_link(links.get(), std::to_string(id), target.string(), file);
  }
}

}  // namespace

void write_experiment_summary(const std::filesystem::path& experiment_dir, const searcher::SearchState& state,
                              std::uint64_t journal_end, const std::string& writer) {
  h5::QuietErrors quiet;
  const auto path = experiment_dir / kExperimentSummaryFileName;
  const auto temporary = temporary_path_for(path);
  try {
    auto file = h5::create_file(temporary);
    write_contents(file.get(), experiment_dir, state, journal_end, writer, temporary);
    file.close(temporary, "HDF5 file");
    publish_file(temporary, path);
  } catch (const std::exception& e) {
    ::unlink(temporary.c_str());
    throw SummaryError(fmt::format("cannot write {}: {}", path.string(), e.what()));
  }
}

}  // namespace dlx::summary
