// SPDX-License-Identifier: Apache-2.0
// dlx-example-logreg: data-parallel logistic regression on synthetic data, linking libdlx.
// Hyperparameters: learning_rate (double), batch_size (int, per rank), epochs (int), l2 (double,
// default 0) -- or, instead of learning_rate and l2, a group optim: {lr: double, l2: double}
// (examples/nested.yaml) --, step_delay_us (int, default 0: a pause after each step, for tests that must catch
// a run in the middle), extra_state_mb (int, default 0: that many MiB of extra trainer state,
// saved in every checkpoint and restored, so that a save lasts long enough for a test to kill
// the writer in the middle of it); data: seed (int, default 7), samples (int, default 4096),
// features (int, default 16); device ("auto": the rank's GPU when this build has the CUDA
// kernels of model_cuda.cu and one is visible, else the CPU; "cpu"; "gpu"). Each epoch reports
// training loss and validation loss/accuracy (summed over all shards). Same seed and world size -> the same numbers, bit for bit. Initial
// weights are drawn on every rank and broadcast from rank 0; the gradients (weights, then bias +
// row count + loss) are summed with one fused allreduce per step.
// Checkpoints (inside a trial, or with DLX_CHECKPOINT_DIR): every checkpoint.period_batches steps
// of the experiment, at a checkpoint signal (SIGTERM/SIGUSR1/SIGUSR2: saved after the current
// step, then exit 85 for a requeue) and at the end. A run starts from the latest valid checkpoint
// (progress.hpp lists what is restored) and ends with the same bytes as one that never stopped.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "compute.hpp"
#include "dataset.hpp"
#include "dlx/trial.hpp"
#include "model.hpp"
#include "progress.hpp"
#include "training.hpp"

namespace {

using dlx::examples::Model;
using dlx::examples::Progress;
using dlx::examples::Settings;
using dlx::examples::Shard;
using dlx::examples::read_settings;
using dlx::examples::steps_per_epoch;
using dlx::examples::train_step;
using dlx::examples::validate;

// Returns the process's exit code: 0, or dlx::kRequeueExitCode after checkpointing on request.
int train(dlx::Trial& trial) {
  const Settings s = read_settings(trial);
  auto& comm = trial.communicator();
  const auto data_file = dlx::examples::dataset_path(trial.experiment_dir(), s.data);
  if (comm.rank() == 0) dlx::examples::ensure_dataset(data_file, s.data);
  comm.barrier();
  const Shard train_shard = dlx::examples::read_shard(data_file, "train", comm.rank(), comm.size());
  const Shard valid_shard =
      dlx::examples::read_shard(data_file, "validation", comm.rank(), comm.size());
  dlx::examples::Compute compute(s.device, train_shard, valid_shard);

  const auto d = static_cast<std::size_t>(train_shard.features);
  Model model{std::vector<double>(d, 0.0), 0.0};
  dlx::examples::initialise(trial, model, s.data.seed);
  Progress p;
  p.order.resize(train_shard.rows());
  std::iota(p.order.begin(), p.order.end(), std::size_t{0});
  p.shuffler.seed(s.data.seed * 1000003ULL + static_cast<std::uint64_t>(comm.rank()));
  const auto mib = static_cast<std::size_t>(s.extra_state_mb);
  p.extra_state.assign(mib * (std::size_t{1} << 20) / sizeof(double), 0.0);
  bool mid_epoch = false;  // resumed inside an epoch: its order is restored, not reshuffled
  if (auto resumed = trial.resume()) {
    dlx::examples::restore(*resumed, model, p);
    mid_epoch = true;
  }
  const auto steps = static_cast<std::int64_t>(steps_per_epoch(s, comm.size()));
  // gradient (d weights + bias), then the batch's row count and summed loss; summed as a list of
  // two tensors (weights | bias, rows, loss), fused into one allreduce.
  std::vector<double> buffer(d + 3);
  const std::vector<dlx::comm::Tensor> gradients{
      dlx::comm::Tensor::of(std::span<double>(buffer).first(d)),
      dlx::comm::Tensor::of(std::span<double>(buffer).subspan(d))};
  // With a searcher length (ASHA, PBT, max_length) the searcher decides how long to train;
  // without one, the `epochs` hyperparameter does.
  const bool searcher_length = trial.target_length() > 0;
  for (; searcher_length || p.epoch < s.epochs; ++p.epoch, mid_epoch = false) {
    if (!mid_epoch) {
      std::shuffle(p.order.begin(), p.order.end(), p.shuffler);
      p.cursor = 0;
      p.epoch_loss = p.epoch_rows = 0;
    }
    while (p.cursor < steps) {
      train_step(trial, s, compute, model, p, buffer, gradients);
      if (s.step_delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(s.step_delay_us));
      // Every rank asks at the same step (collective), so all stop after the same batch.
      if (trial.should_checkpoint_and_exit()) {
        return trial.checkpoint_and_exit(dlx::examples::training_state(model, p));
      }
      if (searcher_length && p.step == trial.target_length()) {
        // The checkpoint first, durable, then the question: a pause (ASHA) or an exploit (PBT)
        // resumes from this very step in another array task.
        if (trial.checkpointing_enabled()) {
          trial.save_checkpoint(dlx::examples::training_state(model, p));
          trial.wait_for_checkpoint(std::chrono::steady_clock::duration::max());
        }
        dlx::Next next = dlx::Next::train;
        p.accuracy = validate(trial, model, compute, p.step, &next);
        if (next != dlx::Next::train) return 0;
      } else if (trial.checkpoint_due(p.step)) {
        trial.save_checkpoint(dlx::examples::training_state(model, p));
      }
    }
    trial.report_training(p.step, {{"loss", p.epoch_loss / p.epoch_rows}});
    p.accuracy = validate(trial, model, compute, p.step);
  }
  p.cursor = 0;
  if (trial.checkpointing_enabled()) {
    trial.save_checkpoint(dlx::examples::training_state(model, p));  // the final weights
  }
  return 0;
}

}  // namespace

int main() {
  try {
    dlx::Trial trial;
    const int status = train(trial);
    if (status == 0) trial.finish();
    return status;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "dlx-example-logreg: %s\n", error.what());
    return dlx::exit_status_for(error);  // 78 for an error in the trial's configuration: not retried
  }
}
