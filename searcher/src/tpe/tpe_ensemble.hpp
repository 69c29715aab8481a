// SPDX-License-Identifier: Apache-2.0
#pragma once
// The models a modelled trial's point comes from: one TpeModel per level (tpe_history.hpp), each
// weighted by how well it orders the top level's results (tpe_weights.hpp).
#include <cstdint>
#include <vector>

#include "tpe_history.hpp"
#include "tpe_model.hpp"

namespace dlx::searcher::detail {

struct TpeEnsemble {
  std::vector<std::int64_t> lengths;  // per level, shortest first
  std::vector<TpeModel> models;       // per level
  // weights[h][k]: level k's weight for hyperparameter h (summing to 1 over k).
  std::vector<std::vector<double>> weights;
};

// Folds of the top level's cross-validation (by rank position, so every fold has good and bad).
inline constexpr std::size_t kTpeFolds = 5;

// `levels` non-empty, every trial in them in `points`.
// Each hyperparameter weighs the levels by how well its own log_ratio orders the top results.
TpeEnsemble fit_ensemble(const std::vector<config::Hyperparameter>& hyperparameters, const TpePoints& points,
                         const std::vector<TpeLevel>& levels, double gamma);

// The top level's models scored on held-out results: fold f's model is fitted to the results whose
// rank position is not f mod folds, and scores those that are: scores[h][i] is result i's
// log_ratio for hyperparameter h.
std::vector<std::vector<double>> cross_validated_scores(const std::vector<config::Hyperparameter>& hyperparameters,
                                           const TpePoints& points, const TpeLevel& top, double gamma);

}  // namespace dlx::searcher::detail
