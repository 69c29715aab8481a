// SPDX-License-Identifier: Apache-2.0
#pragma once
// Logistic regression: p = sigmoid(w.x + b), binary cross-entropy loss. Pure functions over a
// shard; the trainer sums their outputs over ranks with the Communicator.
#include <cstddef>
#include <span>
#include <vector>

#include "dataset.hpp"

namespace dlx::examples {

struct Model {
  std::vector<double> weights;  // [features]
  double bias = 0.0;
};

// Adds the gradient of the summed loss over `rows` of `shard` into gradient[0..features) (weights)
// and gradient[features] (bias); returns the summed loss.
double accumulate_gradient(const Model& model, const Shard& shard,
                           std::span<const std::size_t> rows, std::span<double> gradient);

struct Evaluation {
  double loss_sum = 0;
  double correct = 0;
  double count = 0;
};
Evaluation evaluate(const Model& model, const Shard& shard);

}  // namespace dlx::examples
