// SPDX-License-Identifier: Apache-2.0
#pragma once
// CheckpointWriter: how a trainer saves step-<N>.h5 into its trial's checkpoint directory, with
// the experiment's retention applied after each successful save.
//
// Async (the default): save() waits for the previous save, snapshots the tensors into buffers it
// owns (memcpy for host tensors, device-to-host copies into pinned memory for CUDA tensors), and
// returns; a background thread writes, publishes and applies retention. The training loop stalls
// only for the snapshot. Snapshot buffers are reused from one save to the next.
// Sync: save() does all of that before returning.
//
// Errors (ENOSPC, EIO, EACCES, a missing directory...) are CheckpointErrors naming the file and
// errno; an async save's error is thrown by the next save(), wait() or wait_for(), once. The
// previous checkpoint is untouched either way, so the trial can retry or exit.
//
// Shutdown and preemption: call wait_for(deadline) (true when nothing is left in flight). The
// destructor waits without a deadline and drops any error; call wait() first to see it.
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <optional>
#include <set>
#include <vector>

#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/checkpoint/retention.hpp"

namespace dlx::checkpoint {

struct WriterOptions {
  std::filesystem::path directory;  // trials/<id>/checkpoints (DLX_CHECKPOINT_DIR); must exist
  bool async = true;
  std::optional<RetentionPolicy> retention;  // none: keep everything
  // Steps a searcher decision still references (ASHA pause, PBT exploit); asked after each save.
  std::function<std::set<std::int64_t>()> referenced_steps;
  // The same with the searcher's reasons (libdlx's); asked after each save, on the writer's
  // thread. nullopt: the references cannot be known now, so that save deletes nothing.
  std::function<std::optional<ReferencedSteps>()> searcher_references;
};

class CheckpointWriter {
 public:
  explicit CheckpointWriter(WriterOptions options);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Saves to <directory>/step-<metadata.step>.h5 and returns its path.
  std::filesystem::path save(const CheckpointContent& content);
  void wait();
  bool wait_for(std::chrono::steady_clock::duration deadline);
  bool busy() const;

  // The newest checkpoint this writer published, and how long the last save() blocked.
  std::optional<std::filesystem::path> last_published() const { return last_published_; }
  std::chrono::steady_clock::duration last_stall() const { return last_stall_; }

 private:
  struct Done {
    std::filesystem::path path;
    std::vector<Tensor> buffers;  // handed back for the next snapshot
  };
  void collect();  // takes the finished save's result; rethrows its error
  Done write(CheckpointContent content, std::vector<Tensor> snapshot, std::filesystem::path path);

  WriterOptions options_;
  std::future<Done> in_flight_;
  std::vector<Tensor> spare_;
  std::optional<std::filesystem::path> last_published_;
  std::chrono::steady_clock::duration last_stall_{};
};

}  // namespace dlx::checkpoint
