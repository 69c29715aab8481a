// SPDX-License-Identifier: Apache-2.0
#include "model.hpp"

#include <algorithm>
#include <cmath>

namespace dlx::examples {

namespace {

double logit(const Model& model, const Shard& shard, std::size_t row) {
  const auto d = model.weights.size();
  const double* x = shard.x.data() + row * d;
  double z = model.bias;
  for (std::size_t j = 0; j < d; ++j) z += model.weights[j] * x[j];
  return z;
}

// Binary cross-entropy from the logit, stable for large |z|.
double loss_from_logit(double z, double label) {
  return std::max(z, 0.0) - z * label + std::log1p(std::exp(-std::fabs(z)));
}

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

}  // namespace

double accumulate_gradient(const Model& model, const Shard& shard,
                           std::span<const std::size_t> rows, std::span<double> gradient) {
  const auto d = model.weights.size();
  double loss = 0;
  for (std::size_t row : rows) {
    const double z = logit(model, shard, row);
    const double label = shard.y[row];
    const double error = sigmoid(z) - label;
    const double* x = shard.x.data() + row * d;
    for (std::size_t j = 0; j < d; ++j) gradient[j] += error * x[j];
    gradient[d] += error;
    loss += loss_from_logit(z, label);
  }
  return loss;
}

Evaluation evaluate(const Model& model, const Shard& shard) {
  Evaluation out;
  for (std::size_t row = 0; row < shard.rows(); ++row) {
    const double z = logit(model, shard, row);
    out.loss_sum += loss_from_logit(z, shard.y[row]);
    out.correct += ((z > 0) == (shard.y[row] > 0.5)) ? 1.0 : 0.0;
    out.count += 1.0;
  }
  return out;
}

}  // namespace dlx::examples
