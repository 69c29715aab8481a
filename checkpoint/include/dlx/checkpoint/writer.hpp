// SPDX-License-Identifier: Apache-2.0
#pragma once
// CheckpointWriter: how a trainer saves step-<N>.h5 into its trial's checkpoint directory, with
// the experiment's retention applied after each successful save.
//
// Async (the default): save() waits for the previous save, snapshots the tensors into buffers it
// owns (memcpy for host tensors, device-to-host copies through a few pinned pieces for CUDA
// tensors), and returns; a background thread writes, publishes and applies retention. The
// training loop stalls only for the snapshot. Snapshot buffers are reused from one save to the
// next. Tensors marked snapshot_in_background are copied on that thread too, before the write:
// save() returns at once and the training loop goes on, leaving them unchanged until
// wait_for_snapshot() returns (a trainer calls it just before its optimizer's next update).
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
#include <memory>
#include <mutex>
#include <future>
#include <optional>
#include <set>
#include <vector>

#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/checkpoint/retention.hpp"

namespace dlx::checkpoint {

namespace detail {
class DeviceDownload;
}

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
  // Returns once the last save's snapshot_in_background tensors are copied (or their copy
  // failed: the next save(), wait() or wait_for() throws that error); at once when none are in
  // flight. Never throws. The one member another thread may call while the owner calls others
  // (a watcher that notes the tensors' state the moment the copy is done); not during ~Writer.
  void wait_for_snapshot() noexcept;
  bool snapshot_pending() const;
  // Waits for the save in flight and deletes `path` when it is the checkpoint this writer
  // published last (a snapshot the caller found torn: its tensors changed during the copy).
  // That save's error, if any, is dropped: it published nothing. True when a file was deleted.
  bool withdraw(const std::filesystem::path& path);
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
  std::unique_ptr<detail::DeviceDownload> download_;  // its pinned pieces, kept between saves
  std::future<Done> in_flight_;
  mutable std::mutex snapshot_mutex_;        // guards snapshot_taken_ (wait_for_snapshot)
  std::shared_future<void> snapshot_taken_;  // valid while a background snapshot may be copying
  std::vector<Tensor> spare_;
  std::optional<std::filesystem::path> last_published_;
  std::chrono::steady_clock::duration last_stall_{};
};

}  // namespace dlx::checkpoint
