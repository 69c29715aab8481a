// SPDX-License-Identifier: Apache-2.0
#include "compute.hpp"

#include "dlx/hparams.hpp"

#ifdef DLX_EXAMPLE_CUDA
#include "model_cuda.hpp"
#endif

namespace dlx::examples {

#ifndef DLX_EXAMPLE_CUDA
// Without CUDA there is no device model; the type only has to be complete for unique_ptr.
class DeviceModel {};
#endif

namespace {

bool use_gpu(const std::string& device) {
#ifdef DLX_EXAMPLE_CUDA
  const bool available = gpu_available();
#else
  const bool available = false;
#endif
  if (device == "cpu") return false;
  if (device == "auto") return available;
  if (device == "gpu") {
    if (!available) {
      throw HparamError("hyperparameter 'device' is \"gpu\" but this build has no CUDA kernels or no GPU is visible "
                        "(use \"auto\" or \"cpu\")");
    }
    return true;
  }
  throw HparamError("hyperparameter 'device' is \"" + device + "\"; use \"auto\", \"cpu\" or \"gpu\"");
}

}  // namespace

Compute::Compute(const std::string& device, const Shard& train, const Shard& validation)
    : train_(train), validation_(validation) {
  if (use_gpu(device)) {
#ifdef DLX_EXAMPLE_CUDA
    train_device_ = std::make_unique<DeviceModel>(train);
    validation_device_ = std::make_unique<DeviceModel>(validation);
#endif
  }
}

Compute::~Compute() = default;

double Compute::accumulate_gradient(const Model& model, std::span<const std::size_t> rows,
                                    std::span<double> gradient) {
#ifdef DLX_EXAMPLE_CUDA
  if (train_device_) return train_device_->accumulate_gradient(model, rows, gradient);
#endif
  return dlx::examples::accumulate_gradient(model, train_, rows, gradient);
}

Evaluation Compute::evaluate_validation(const Model& model) {
#ifdef DLX_EXAMPLE_CUDA
  if (validation_device_) return validation_device_->evaluate(model);
#endif
  return dlx::examples::evaluate(model, validation_);
}

}  // namespace dlx::examples
