// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Trial's checkpoint machinery (src/checkpointing.cpp): the experiment's policy, from the
// trial's context (its frozen experiment), and rank 0's CheckpointWriter.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/checkpoint/retention.hpp"
#include "dlx/checkpoint/writer.hpp"
#include "dlx/config/experiment.hpp"
#include "dlx/env/trial_context.hpp"

namespace dlx::detail {

struct CheckpointSettings {
  std::filesystem::path directory;             // DLX_CHECKPOINT_DIR
  config::CheckpointPolicy policy;             // the experiment's `checkpoint:` section
  std::optional<checkpoint::RetentionPolicy> retention;  // none without a snapshot: keep all
  checkpoint::Expectation expect;              // this experiment and trial
};

// From the trial's context: its checkpoint directory and its frozen experiment's policy (defaults
// without a snapshot). Throws config::ConfigError for a broken snapshot.
CheckpointSettings read_checkpoint_settings(env::TrialContext& context);

class Checkpointer {
 public:
  Checkpointer(CheckpointSettings settings, bool writes);
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  const CheckpointSettings& settings() const noexcept { return settings_; }
  // Rank 0's writer; null on the other ranks.
  checkpoint::CheckpointWriter* writer() noexcept { return writer_.get(); }
  // Gives up on a save that missed its deadline: the writer is left to finish (or to die with the
  // process) instead of being waited for; later saves get a new writer.
  void abandon_writer();

  // The searcher's references to this trial's checkpoints, set by rank 0's training thread
  // before each save and read by the writer's thread when it applies retention after that save.
  // nullopt (the start, or a journal that could not be read): retention deletes nothing.
  void set_searcher_references(std::optional<checkpoint::ReferencedSteps> references);

  std::optional<std::int64_t> last_saved_step;
  std::chrono::steady_clock::time_point last_save_time = std::chrono::steady_clock::now();

 private:
  struct SharedReferences {
    std::mutex mutex;
    std::optional<checkpoint::ReferencedSteps> steps;
  };
  checkpoint::WriterOptions writer_options() const;

  CheckpointSettings settings_;
  std::shared_ptr<SharedReferences> references_ = std::make_shared<SharedReferences>();
  std::unique_ptr<checkpoint::CheckpointWriter> writer_;
};

}  // namespace dlx::detail
