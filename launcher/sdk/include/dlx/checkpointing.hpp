// SPDX-License-Identifier: Apache-2.0
#pragma once
// Checkpoints from a libdlx trainer: what it saves (TrainingState) and what resume() hands back
// (ResumedState). The Trial methods that use them are in trial.hpp's "Checkpoints" section; the
// protocol (notice, agreement, save, exit 85, requeue, resume) is described step by step in
// launcher/sdk/src/checkpointing.cpp and docs/fault-tolerance.md.
//
//   auto resumed = trial.resume();                    // collective; nullopt on a fresh start
//   if (resumed) { resumed->restore("model/weights", std::span<double>(w)); step = resumed->step(); }
//   for (...) {
//     ... one step ...
//     if (trial.checkpoint_due(step)) trial.save_checkpoint(state());           // async
//     if (trial.should_checkpoint_and_exit()) return trial.checkpoint_and_exit(state());  // 85
//   }
//   trial.save_checkpoint(state()); trial.finish();   // finish() waits for the save
//
// Layout in the file (docs/checkpoint-format.md): replicated tensors under their own names,
// every rank's own tensors under ranks/<rank>/<name>, its RNG streams under rng/rank-<rank>/<name>
// (uint8 bytes), the data cursor as the state value "data_cursor".
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/common/error.hpp"

namespace dlx {

// A checkpoint could not be saved or resumed; what() says which file and why.
class CheckpointingError : public Error {
 public:
  using Error::Error;
};

// What a trainer saves at a step. Replicated state (the same on every rank: the model, the
// optimizer, a global data cursor) is taken from rank 0; per-rank state is gathered from every
// rank (host memory only).
struct TrainingState {
  std::int64_t step = 0;         // batches done: the searcher's unit, and the file's step-<N>
  std::int64_t epoch = 0;
  std::int64_t data_cursor = 0;  // batches done within the current epoch
  std::vector<checkpoint::TensorView> tensors;       // replicated; host or CUDA memory
  std::vector<checkpoint::TensorView> rank_tensors;  // this rank's; saved as ranks/<r>/<name>
  std::map<std::string, std::string> rng_streams;    // this rank's RNG states, as bytes
  checkpoint::StateMap state;                        // replicated small values
  std::optional<double> metric;  // the searcher metric at this step (for keep_best)
  // The CUDA stream whose kernels wrote the device tensors in `tensors` (a cudaStream_t; nullptr:
  // the legacy default stream): the library's copies of them wait for the work queued on it so
  // far (an event; the host does not wait for the stream). A tensor marked
  // snapshot_in_background is copied after save_checkpoint() returns: keep it unchanged until
  // wait_for_snapshot() (e.g. just before the optimizer's next update).
  void* cuda_stream = nullptr;
};

// Names inside the file.
std::string rank_tensor_name(int rank, std::string_view name);  // ranks/<rank>/<name>
std::string rng_tensor_name(int rank, std::string_view name);   // rng/rank-<rank>/<name>

// A verified checkpoint as this rank sees it.
class ResumedState {
 public:
  ResumedState(checkpoint::Checkpoint checkpoint, std::filesystem::path path, int rank);

  std::int64_t step() const noexcept { return checkpoint_.metadata.step; }
  std::int64_t epoch() const noexcept { return checkpoint_.metadata.epoch; }
  std::int64_t data_cursor() const;
  const std::filesystem::path& path() const noexcept { return path_; }
  const checkpoint::Checkpoint& checkpoint() const noexcept { return checkpoint_; }

  // Each throws CheckpointingError naming the file and the tensor when it is absent (or, for
  // tensor(), deferred: see restore).
  const checkpoint::Tensor& tensor(std::string_view name) const;
  const checkpoint::Tensor& rank_tensor(std::string_view name) const;  // this rank's
  std::string rng_stream(std::string_view name) const;                 // this rank's
  const checkpoint::StateValue& state(std::string_view name) const;

  // Copies a replicated (or, with restore_rank(), this rank's) tensor into `out`; throws
  // CheckpointingError when its element type or element count differs. A tensor the resume
  // deferred (Trial::resume's `defer`) is read from the file straight into `out`, checksummed
  // as it is read: the bytes never pass through memory of the library's.
  template <class T>
  void restore(std::string_view name, std::span<T> out) const {
    copy_out(name, std::as_writable_bytes(out), sizeof(T), std::is_floating_point_v<T>);
  }
  template <class T>
  void restore_rank(std::string_view name, std::span<T> out) const {
    copy_out(rank_tensor_name(rank_, name), std::as_writable_bytes(out), sizeof(T),
             std::is_floating_point_v<T>);
  }

 private:
  void copy_out(std::string_view name, std::span<std::byte> out, std::size_t element,
                bool floating) const;

  checkpoint::Checkpoint checkpoint_;
  std::filesystem::path path_;
  int rank_ = 0;
};


}  // namespace dlx
