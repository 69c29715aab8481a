// SPDX-License-Identifier: Apache-2.0
#pragma once
// The same model functions as model.hpp, computed on the rank's GPU (built when CUDA is found).
// The shard is copied to the device once; each call copies the weights and the batch's row
// indices in and the d + 2 sums out. Reduction order is fixed (one thread per output column
// summing the batch rows in order), so a run is bit-reproducible on the same GPU model and world
// size; it is not bit-identical to the CPU path (the device's exp/log1p round differently).
#include <cstddef>
#include <memory>
#include <span>

#include "dataset.hpp"
#include "model.hpp"

namespace dlx::examples {

// True when this build has the CUDA path and a GPU is visible to this process.
bool gpu_available();

class DeviceModel {
 public:
  // Copies `shard` to the current device (the one the NCCL backend bound, if any). Throws
  // std::runtime_error naming the CUDA error.
  explicit DeviceModel(const Shard& shard);
  ~DeviceModel();
  DeviceModel(const DeviceModel&) = delete;
  DeviceModel& operator=(const DeviceModel&) = delete;

  // As dlx::examples::accumulate_gradient.
  double accumulate_gradient(const Model& model, std::span<const std::size_t> rows,
                             std::span<double> gradient);
  // As dlx::examples::evaluate.
  Evaluation evaluate(const Model& model);

 private:
  struct Buffers;
  std::unique_ptr<Buffers> buffers_;
};

}  // namespace dlx::examples
