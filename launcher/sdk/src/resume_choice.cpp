// SPDX-License-Identifier: Apache-2.0
// choose_checkpoint: DLX_LATEST_CHECKPOINT (this trial's, or the searcher's start checkpoint of
// another trial), else latest-valid discovery in the trial's directory.
#include "resume_choice.hpp"

#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "dlx/checkpoint/discovery.hpp"
#include "dlx/checkpointing.hpp"
#include "dlx/store/experiment_layout.hpp"

namespace dlx::detail {
namespace {

void log(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  std::fflush(stderr);
}

bool same_directory(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code error;
  const auto left = std::filesystem::weakly_canonical(a, error);
  const auto right = std::filesystem::weakly_canonical(b, error);
  return error ? a.lexically_normal() == b.lexically_normal() : left == right;
}

// A checkpoint outside this trial's directory is used only when it is the one the searcher named
// for this trial's start (a PBT trial continues its member's previous trial or exploits a
// parent): then it must hold that trial and step. Anything else (a stale or hand-set
// DLX_LATEST_CHECKPOINT pointing at another trial) is refused: resuming another trial's weights
// under this trial's hyperparameters would be silently wrong.
Chosen load_foreign(const std::filesystem::path& named, const env::TrialEnvironment& environment,
                    const CheckpointSettings& settings, const StartLookup& start_of,
                    const checkpoint::Deferral& defer) {
  const auto start = start_of();
  std::optional<std::filesystem::path> expected;
  if (start && environment.experiment_dir) {
    expected = store::checkpoint_dir(*environment.experiment_dir, static_cast<int>(start->first)) /
               fmt::format("step-{}.h5", start->second);
  }
  if (!expected || !same_directory(named, *expected)) {
    throw CheckpointingError(fmt::format(
        "it is not in this trial's checkpoint directory {} and is not the checkpoint the "
        "searcher named for trial {}'s start ({}); a trial resumes only its own checkpoints or "
        "that one", settings.directory.string(), environment.trial_id,
        expected ? expected->string() : std::string("none")));
  }
  checkpoint::Expectation parent{.experiment = settings.expect.experiment, .trial_id = start->first};
  auto loaded = checkpoint::load_checkpoint(named, parent, defer);
  if (loaded.metadata.step != start->second) {
    throw CheckpointingError(fmt::format("it holds step {}, but the searcher named step {}",
                                         loaded.metadata.step, start->second));
  }
  return {std::move(loaded), named,
          record::StartCheckpoint{start->first, start->second, named.string()}};
}

}  // namespace

checkpoint::Expectation expectation_for(const std::filesystem::path& path,
                                        const CheckpointSettings& settings) {
  if (same_directory(path.parent_path(), settings.directory)) return settings.expect;
  return {.experiment = settings.expect.experiment, .trial_id = std::nullopt};
}

// Rank 0: the named checkpoint when it loads, else latest-valid discovery; skips are reported.
Chosen choose_checkpoint(const env::TrialEnvironment& environment,
                         const CheckpointSettings& settings, const StartLookup& start_of,
                         const checkpoint::Deferral& defer) {
  if (environment.latest_checkpoint) {
    const auto& named = *environment.latest_checkpoint;
    try {
      if (!same_directory(named.parent_path(), settings.directory)) {
        return load_foreign(named, environment, settings, start_of, defer);
      }
      return {checkpoint::load_checkpoint(named, settings.expect, defer), named, std::nullopt};
    } catch (const checkpoint::DeviceLoadError&) {
      throw;  // the device failed, not the file
    } catch (const Error& error) {
      log(fmt::format("dlx: DLX_LATEST_CHECKPOINT={} cannot be used: {}; looking for the latest "
                      "valid checkpoint in {}", named.string(), error.what(),
                      settings.directory.string()));
    }
  }
  auto found = checkpoint::load_latest_valid(settings.directory, settings.expect, defer);
  for (const auto& skipped : found.skipped) {
    log(fmt::format("dlx: skipping checkpoint {}: {}", skipped.path.string(), skipped.reason));
  }
  if (!found.checkpoint) return {};
  return {std::move(found.checkpoint), *found.path, std::nullopt};
}

}  // namespace dlx::detail
