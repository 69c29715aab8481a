// SPDX-License-Identifier: Apache-2.0
#pragma once
// The checkpoint overhead in the example trainer (examples/logreg): its own step (train_step:
// Compute's gradient, the fused allreduce, the update) and its own checkpoint path (the
// TrainingState of progress.hpp saved through Trial::save_checkpoint, libdlx's async
// CheckpointWriter), on synthetic data from its generator held in memory (no data file).
//
// A run is `periods` checkpoint periods of `every` steps. With checkpoints it saves before the
// first step of each period (steps 0, every, 2 every, ...) and waits for the last save at the
// end, so each save has its period to be written in the background and the run is exactly
// `periods` periods of the steady state: the wait at the end is what the next period's save
// would have waited for. Without checkpoints it runs the same steps and saves nothing.
#include <cstdint>
#include <memory>

#include "dlx/trial.hpp"

namespace dlx::bench {

struct TrainerSetup {
  std::int64_t features = 4096;    // model width: weights are features float64
  std::int64_t samples = 4096;     // synthetic rows (80% train)
  int batch = 256;
  std::int64_t extra_state_mb = 0;  // the trainer's extra state (progress.hpp), saved every time
  std::int64_t every = 200;         // steps per checkpoint period
  std::int64_t periods = 2;         // periods per run
};

struct TrainerTimes {
  double seconds = 0;             // the whole run, the final wait included
  double stall_seconds = 0;       // summed time inside Trial::save_checkpoint
  double final_wait_seconds = 0;  // Trial::wait_for_checkpoint for the last save
};

class TrainerRun {
 public:
  // `trial` outlives this; its checkpoint directory (DLX_CHECKPOINT_DIR) receives the saves.
  TrainerRun(Trial& trial, const TrainerSetup& setup);
  ~TrainerRun();
  TrainerRun(const TrainerRun&) = delete;
  TrainerRun& operator=(const TrainerRun&) = delete;

  TrainerTimes run(bool checkpoints);
  // One save after a run's first step and an immediate wait: stall_seconds is the save's stall,
  // final_wait_seconds the rest of its background write.
  TrainerTimes profile_save();
  // Bytes of one checkpoint's tensors (weights, bias, extra state, shard order).
  std::uint64_t state_bytes() const;

 private:
  struct Impl;
  struct State;
  TrainerTimes steps(State& state, std::int64_t count, bool checkpoints);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dlx::bench
