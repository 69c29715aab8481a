// SPDX-License-Identifier: Apache-2.0
#include "training.hpp"

#include <algorithm>
#include <random>
#include <span>

namespace dlx::examples {

Settings read_settings(const dlx::Trial& trial) {
  Settings s;
  // The optimiser's settings as a group, the way Determined experiments write them
  // (optim: {lr: ..., l2: ...}: DLX_HPARAMS passes it nested), or as top-level names.
  if (trial.hparams().contains("optim")) {
    s.learning_rate = trial.hparam<double>("optim.lr");
    s.l2 = trial.hparam<double>("optim.l2", 0.0);
  } else {
    s.learning_rate = trial.hparam<double>("learning_rate");
    s.l2 = trial.hparam<double>("l2", 0.0);
  }
  s.batch_size = trial.hparam<int>("batch_size");
  s.epochs = trial.hparam<int>("epochs");
  s.step_delay_us = trial.hparam<std::int64_t>("step_delay_us", 0);
  s.extra_state_mb = trial.hparam<std::int64_t>("extra_state_mb", 0);
  s.device = trial.hparam<std::string>("device", "auto");
  s.data.seed = trial.hparam<std::uint64_t>("seed", 7);
  s.data.samples = trial.hparam<std::int64_t>("samples", 4096);
  s.data.features = trial.hparam<std::int64_t>("features", 16);
  if (s.learning_rate <= 0 || s.batch_size < 1 || s.epochs < 1 || s.data.samples < 10 ||
      s.data.features < 1 || s.extra_state_mb < 0) {
    throw dlx::HparamError("need learning_rate (or optim.lr) > 0, batch_size >= 1, "
                           "epochs >= 1, samples >= 10, features >= 1, extra_state_mb >= 0");
  }
  return s;
}

// Every rank runs the same number of steps per epoch (collectives must match); ranks whose shard
// is one row shorter contribute an empty batch at the end.
std::size_t steps_per_epoch(const Settings& s, int world) {
  const auto rows = static_cast<std::size_t>(s.data.samples - static_cast<std::int64_t>(
                                                 static_cast<double>(s.data.samples) *
                                                 s.data.validation_fraction));
  const auto per_rank = (rows + static_cast<std::size_t>(world) - 1) / static_cast<std::size_t>(world);
  const auto batch = static_cast<std::size_t>(s.batch_size);
  return (per_rank + batch - 1) / batch;
}

// Reports validation loss and accuracy over all shards; returns the accuracy. `next`: what the
// searcher said (train on, unless the step was the trial's target length).
double validate(dlx::Trial& trial, const Model& model, Compute& compute, std::int64_t step,
                dlx::Next* next) {
  const auto local = compute.evaluate_validation(model);
  std::vector<double> sums{local.loss_sum, local.correct, local.count};
  trial.communicator().allreduce_sum(std::span<double>(sums));
  const auto said =
      trial.report_validation(step, {{"loss", sums[0] / sums[2]}, {"accuracy", sums[1] / sums[2]}});
  if (next) *next = said;
  return sums[1] / sums[2];
}

// Small random initial weights. Each rank draws its own; broadcast_parameters makes them equal.
void initialise(dlx::Trial& trial, Model& model, std::uint64_t seed) {
  std::mt19937_64 rng(seed + 17 + static_cast<std::uint64_t>(trial.rank()));
  std::uniform_real_distribution<double> small(-0.01, 0.01);
  for (auto& w : model.weights) w = small(rng);
  model.bias = small(rng);
  std::vector<dlx::comm::Tensor> params{
      dlx::comm::Tensor::of(std::span<double>(model.weights)),
      dlx::comm::Tensor::of(std::span<double>(&model.bias, 1))};
  trial.broadcast_parameters(params);
}

// One step over batch `i` of this epoch's order: local gradient, one fused allreduce of gradient,
// row count and loss, then the update (identical on every rank).
void train_step(dlx::Trial& trial, const Settings& s, Compute& compute, Model& model,
                Progress& p, std::vector<double>& buffer,
                const std::vector<dlx::comm::Tensor>& gradients) {
  const auto d = model.weights.size();
  const auto batch = static_cast<std::size_t>(s.batch_size);
  std::fill(buffer.begin(), buffer.end(), 0.0);
  const auto first = std::min(static_cast<std::size_t>(p.cursor) * batch, p.order.size());
  const auto last = std::min(first + batch, p.order.size());
  std::span<const std::size_t> rows(p.order.data() + first, last - first);
  buffer[d + 2] = compute.accumulate_gradient(model, rows, buffer);
  buffer[d + 1] = static_cast<double>(rows.size());
  trial.allreduce(gradients);
  const double count = buffer[d + 1];
  p.epoch_loss += buffer[d + 2];
  p.epoch_rows += count;
  ++p.step;
  ++p.cursor;
  // The extra state follows the run (one entry per step), so a wrong restore shows in the bytes.
  if (!p.extra_state.empty()) {
    p.extra_state[static_cast<std::size_t>(p.step) % p.extra_state.size()] += buffer[d + 2];
  }
  if (count == 0) return;
  for (std::size_t j = 0; j < d; ++j) {
    model.weights[j] -= s.learning_rate * (buffer[j] / count + s.l2 * model.weights[j]);
  }
  model.bias -= s.learning_rate * buffer[d] / count;
}

}  // namespace dlx::examples
