// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where the example trainer computes: the rank's GPU when this build has the CUDA kernels
// (model_cuda.cu) and a GPU is visible, else the CPU (model.cpp). Hyperparameter `device`:
// "auto" (default), "cpu", or "gpu" (an error when there is none).
#include <memory>
#include <span>
#include <string>

#include "dataset.hpp"
#include "model.hpp"

namespace dlx::examples {

class DeviceModel;

class Compute {
 public:
  // Throws dlx::HparamError for an unknown `device`, or "gpu" without one.
  Compute(const std::string& device, const Shard& train, const Shard& validation);
  ~Compute();
  Compute(const Compute&) = delete;
  Compute& operator=(const Compute&) = delete;

  double accumulate_gradient(const Model& model, std::span<const std::size_t> rows, std::span<double> gradient);
  Evaluation evaluate_validation(const Model& model);
  const char* where() const noexcept { return on_gpu() ? "gpu" : "cpu"; }
  bool on_gpu() const noexcept { return train_device_ != nullptr; }

 private:
  const Shard& train_;
  const Shard& validation_;
  std::unique_ptr<DeviceModel> train_device_;
  std::unique_ptr<DeviceModel> validation_device_;
};

}  // namespace dlx::examples
