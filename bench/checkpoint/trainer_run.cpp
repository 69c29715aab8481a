// SPDX-License-Identifier: Apache-2.0
#include "trainer_run.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <vector>

#include "compute.hpp"
#include "dataset.hpp"
#include "model.hpp"
#include "progress.hpp"
#include "synthetic.hpp"
#include "training.hpp"

namespace dlx::bench {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The generator's rows split as ensure_dataset splits them (validation last), one rank's shard.
examples::Shard shard_of(const examples::SyntheticData& data, std::int64_t features,
                         std::size_t first, std::size_t last) {
  const auto d = static_cast<std::size_t>(features);
  examples::Shard shard;
  shard.features = features;
  shard.x.assign(data.x.begin() + static_cast<std::ptrdiff_t>(first * d),
                 data.x.begin() + static_cast<std::ptrdiff_t>(last * d));
  shard.y.assign(data.y.begin() + static_cast<std::ptrdiff_t>(first),
                 data.y.begin() + static_cast<std::ptrdiff_t>(last));
  return shard;
}

}  // namespace

struct TrainerRun::Impl {
  Trial& trial;
  TrainerSetup setup;
  examples::Settings settings;
  examples::Shard train, validation;
  std::unique_ptr<examples::Compute> compute;
};

TrainerRun::TrainerRun(Trial& trial, const TrainerSetup& setup)
    : impl_(std::make_unique<Impl>(Impl{trial, setup, {}, {}, {}, nullptr})) {
  auto& s = impl_->settings;
  s.learning_rate = 0.1;
  s.batch_size = setup.batch;
  s.epochs = 1;
  s.extra_state_mb = setup.extra_state_mb;
  s.device = "cpu";
  s.data.samples = setup.samples;
  s.data.features = setup.features;
  const auto data = examples::generate_synthetic(s.data.seed, s.data.samples, s.data.features);
  const auto rows = static_cast<std::size_t>(s.data.samples);
  const auto validation_rows =
      static_cast<std::size_t>(static_cast<double>(s.data.samples) * s.data.validation_fraction);
  impl_->train = shard_of(data, setup.features, 0, rows - validation_rows);
  impl_->validation = shard_of(data, setup.features, rows - validation_rows, rows);
  impl_->compute = std::make_unique<examples::Compute>(s.device, impl_->train, impl_->validation);
}

TrainerRun::~TrainerRun() = default;

std::uint64_t TrainerRun::state_bytes() const {
  const auto& s = impl_->settings;
  return (static_cast<std::uint64_t>(s.data.features) + 1 + impl_->train.rows()) * 8 +
         static_cast<std::uint64_t>(s.extra_state_mb) * (std::uint64_t{1} << 20);
}

// A run's state as train() in train.cpp builds it: initial weights, this rank's order and
// shuffler, the extra state, the gradient buffer and its views.
struct TrainerRun::State {
  examples::Model model;
  examples::Progress progress;
  std::vector<double> buffer;
  std::vector<comm::Tensor> gradients;
};

TrainerTimes TrainerRun::run(bool checkpoints) {
  State state;
  auto times = steps(state, impl_->setup.every * impl_->setup.periods, checkpoints);
  if (checkpoints) {
    const auto wait_start = Clock::now();
    impl_->trial.wait_for_checkpoint(Clock::duration::max());
    times.final_wait_seconds = since(wait_start);
    times.seconds += times.final_wait_seconds;
  }
  return times;
}

TrainerTimes TrainerRun::profile_save() {
  State state;
  (void)steps(state, 1, false);
  TrainerTimes times;
  auto start = Clock::now();
  impl_->trial.save_checkpoint(examples::training_state(state.model, state.progress));
  times.stall_seconds = since(start);
  start = Clock::now();
  impl_->trial.wait_for_checkpoint(Clock::duration::max());
  times.final_wait_seconds = since(start);
  return times;
}

TrainerTimes TrainerRun::steps(State& state, std::int64_t count, bool checkpoints) {
  auto& trial = impl_->trial;
  const auto& s = impl_->settings;
  const auto d = static_cast<std::size_t>(s.data.features);
  auto& model = state.model;
  auto& p = state.progress;
  if (model.weights.empty()) {
    model.weights.assign(d, 0.0);
    examples::initialise(trial, model, s.data.seed);
    p.order.resize(impl_->train.rows());
    std::iota(p.order.begin(), p.order.end(), std::size_t{0});
    p.shuffler.seed(s.data.seed * 1000003ULL);
    p.extra_state.assign(static_cast<std::size_t>(s.extra_state_mb) * (std::size_t{1} << 20) /
                             sizeof(double),
                         0.0);
    state.buffer.assign(d + 3, 0.0);
    state.gradients = {comm::Tensor::of(std::span<double>(state.buffer).first(d)),
                       comm::Tensor::of(std::span<double>(state.buffer).subspan(d))};
  }
  const auto steps_per_epoch =
      static_cast<std::int64_t>(examples::steps_per_epoch(s, trial.size()));

  TrainerTimes times;
  const auto start = Clock::now();
  for (std::int64_t i = 0; i < count; ++i) {
    if (p.step == 0 || p.cursor == steps_per_epoch) {  // an epoch starts: train()'s reshuffle
      if (p.step > 0) ++p.epoch;
      std::shuffle(p.order.begin(), p.order.end(), p.shuffler);
      p.cursor = 0;
      p.epoch_loss = p.epoch_rows = 0;
    }
    if (checkpoints && p.step % impl_->setup.every == 0) {
      const auto save_start = Clock::now();
      trial.save_checkpoint(examples::training_state(model, p));
      times.stall_seconds += since(save_start);
    }
    examples::train_step(trial, s, *impl_->compute, model, p, state.buffer, state.gradients);
  }
  times.seconds = since(start);
  return times;
}

}  // namespace dlx::bench
