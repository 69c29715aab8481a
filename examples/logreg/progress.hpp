// SPDX-License-Identifier: Apache-2.0
#pragma once
// Everything the logistic-regression trainer needs to continue exactly where it stopped: the
// model, the position (step, epoch, batches into the epoch), the epoch's running loss sums, the
// last validation accuracy, and each rank's shard order and shuffler state. A run resumed from
// any checkpoint therefore ends with the same bytes as one that never stopped.
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "dlx/checkpointing.hpp"
#include "model.hpp"

namespace dlx::examples {

struct Progress {
  std::int64_t step = 0;    // batches done in the whole run
  std::int64_t epoch = 0;   // current epoch (== epochs when training is over)
  std::int64_t cursor = 0;  // batches done within the current epoch
  double epoch_loss = 0;    // summed over all ranks (the same on every rank)
  double epoch_rows = 0;
  std::optional<double> accuracy;        // last validation accuracy (the searcher metric)
  std::vector<std::size_t> order;        // this rank's shard order for the current epoch
  std::mt19937_64 shuffler;              // this rank's shuffler, after the current epoch's shuffle
  // Tests only (hparam extra_state_mb, default 0: absent from checkpoints): ballast that makes
  // the checkpoint that many MiB bigger; each step adds its batch loss to one entry.
  std::vector<double> extra_state;
};

// Views into `model` and `progress` (which must stay alive until save_checkpoint returns).
dlx::TrainingState training_state(Model& model, Progress& progress);

// Overwrites `model` and `progress` from a checkpoint; throws dlx::CheckpointingError when it
// does not fit (another feature count or shard size).
void restore(const dlx::ResumedState& resumed, Model& model, Progress& progress);

}  // namespace dlx::examples
