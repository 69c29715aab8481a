// SPDX-License-Identifier: Apache-2.0
#pragma once
// One step of the logistic-regression trainer and what it needs (train.cpp runs the loop): its
// settings from the hyperparameters, the steps of an epoch, the initial weights, validation.
// Separate from train.cpp so that bench_checkpoint (bench/checkpoint/) measures checkpoint
// overhead on this very step.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "compute.hpp"
#include "dataset.hpp"
#include "dlx/trial.hpp"
#include "model.hpp"
#include "progress.hpp"

namespace dlx::examples {

struct Settings {
  double learning_rate = 0;
  int batch_size = 0;
  int epochs = 0;
  double l2 = 0;
  std::int64_t step_delay_us = 0;  // tests only: slows each step so a preemption lands mid-run
  std::int64_t extra_state_mb = 0;  // tests only: a bigger checkpoint (see Progress::extra_state)
  std::string device = "auto";       // where to compute: auto (the GPU when there is one), cpu, gpu
  DataSpec data;
};

// From the trial's hyperparameters (train.cpp's header lists them); throws dlx::HparamError.
Settings read_settings(const dlx::Trial& trial);

// Every rank runs the same number of steps per epoch (collectives must match); ranks whose shard
// is one row shorter contribute an empty batch at the end.
std::size_t steps_per_epoch(const Settings& s, int world);

// Reports validation loss and accuracy over all shards; returns the accuracy. `next`: what the
// searcher said (train on, unless the step was the trial's target length).
double validate(dlx::Trial& trial, const Model& model, Compute& compute, std::int64_t step,
                dlx::Next* next = nullptr);

// Small random initial weights. Each rank draws its own; broadcast_parameters makes them equal.
void initialise(dlx::Trial& trial, Model& model, std::uint64_t seed);

// One step over batch `p.cursor` of this epoch's order: local gradient into `buffer` (d weights,
// bias, row count, loss), one fused allreduce of `gradients` (views of `buffer`), then the
// update (identical on every rank).
void train_step(dlx::Trial& trial, const Settings& s, Compute& compute, Model& model, Progress& p,
                std::vector<double>& buffer, const std::vector<dlx::comm::Tensor>& gradients);

}  // namespace dlx::examples
