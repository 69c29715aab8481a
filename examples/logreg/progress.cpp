// SPDX-License-Identifier: Apache-2.0
#include "progress.hpp"

#include <sstream>

namespace dlx::examples {

namespace {

using checkpoint::DType;
using checkpoint::TensorView;

}  // namespace

dlx::TrainingState training_state(Model& model, Progress& progress) {
  dlx::TrainingState state;
  state.step = progress.step;
  state.epoch = progress.epoch;
  state.data_cursor = progress.cursor;
  state.tensors = {
      TensorView{"model/weights", DType::float64, {model.weights.size()}, model.weights.data()},
      TensorView{"model/bias", DType::float64, {}, &model.bias}};
  if (!progress.extra_state.empty()) {
    state.tensors.push_back(TensorView{"extra_state", DType::float64,
                                       {progress.extra_state.size()}, progress.extra_state.data()});
  }
  static_assert(sizeof(std::size_t) == sizeof(std::uint64_t));
  state.rank_tensors = {
      TensorView{"order", DType::uint64, {progress.order.size()}, progress.order.data()}};
  std::ostringstream shuffler;
  shuffler << progress.shuffler;
  state.rng_streams["shuffler"] = shuffler.str();
  state.state["epoch_loss"] = progress.epoch_loss;
  state.state["epoch_rows"] = progress.epoch_rows;
  if (progress.accuracy) state.state["accuracy"] = *progress.accuracy;
  state.metric = progress.accuracy;
  return state;
}

void restore(const dlx::ResumedState& resumed, Model& model, Progress& progress) {
  resumed.restore("model/weights", std::span<double>(model.weights));
  resumed.restore("model/bias", std::span<double>(&model.bias, 1));
  if (!progress.extra_state.empty()) {
    resumed.restore("extra_state", std::span<double>(progress.extra_state));
  }
  resumed.restore_rank("order", std::span<std::size_t>(progress.order));
  std::istringstream shuffler(resumed.rng_stream("shuffler"));
  shuffler >> progress.shuffler;
  if (!shuffler) {
    throw dlx::CheckpointingError("dlx-example-logreg: " + resumed.path().string() +
                                  ": the shuffler state does not parse");
  }
  progress.step = resumed.step();
  progress.epoch = resumed.epoch();
  progress.cursor = resumed.data_cursor();
  progress.epoch_loss = std::get<double>(resumed.state("epoch_loss"));
  progress.epoch_rows = std::get<double>(resumed.state("epoch_rows"));
  if (resumed.checkpoint().state.count("accuracy") != 0) {
    progress.accuracy = std::get<double>(resumed.state("accuracy"));
  }
}

}  // namespace dlx::examples
