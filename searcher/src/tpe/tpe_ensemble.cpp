// SPDX-License-Identifier: Apache-2.0
#include "tpe_ensemble.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "tpe_weights.hpp"

namespace dlx::searcher::detail {

namespace {

// scores[h][i]: `model`'s log_ratio of hyperparameter h at result i's value (0 where not modelled).
void score_results(const std::vector<config::Hyperparameter>& hyperparameters, const TpePoints& points,
                   const TpeModel& model, const TpeLevel& level, std::size_t i,
                   std::vector<std::vector<double>>& scores) {
  const auto& point = points.at(level.ranked[i].trial);
  for (std::size_t h = 0; h < hyperparameters.size(); ++h) {
    if (!std::isnan(point[h])) scores[h][i] = model.log_ratio(h, point[h]);
  }
}

}  // namespace

std::vector<std::vector<double>> cross_validated_scores(const std::vector<config::Hyperparameter>& hyperparameters,
                                                        const TpePoints& points, const TpeLevel& top, double gamma) {
  const std::size_t n = top.ranked.size();
  const std::size_t folds = std::min(kTpeFolds, n);
  std::vector<std::vector<double>> scores(hyperparameters.size(), std::vector<double>(n, 0.0));
  for (std::size_t fold = 0; fold < folds; ++fold) {
    TpeLevel training{top.length, {}};
    for (std::size_t i = 0; i < n; ++i) {
      if (i % folds != fold) training.ranked.push_back(top.ranked[i]);
    }
    if (training.ranked.size() < 2) continue;  // too few to split: those results score 0 (ties)
    const TpeModel model(hyperparameters, points, split_level(training, gamma));
    for (std::size_t i = fold; i < n; i += folds) score_results(hyperparameters, points, model, top, i, scores);
  }
  return scores;
}

TpeEnsemble fit_ensemble(const std::vector<config::Hyperparameter>& hyperparameters, const TpePoints& points,
                         const std::vector<TpeLevel>& levels, double gamma) {
  TpeEnsemble out;
  for (const auto& level : levels) {
    out.lengths.push_back(level.length);
    out.models.emplace_back(hyperparameters, points, split_level(level, gamma));
  }
  const std::size_t h_count = hyperparameters.size();
  if (levels.size() == 1) {
    out.weights.assign(h_count, {1.0});
    return out;
  }
  const TpeLevel& top = levels.back();
  const std::size_t n = top.ranked.size();
  std::vector<double> observed;
  for (const auto& result : top.ranked) observed.push_back(result.oriented);
  std::vector<std::vector<std::optional<double>>> agreements(h_count);  // [h][k]
  auto judge = [&](const std::vector<std::vector<double>>& scores) {
    for (std::size_t h = 0; h < h_count; ++h) agreements[h].push_back(pair_agreement(scores[h], observed));
  };
  for (std::size_t k = 0; k + 1 < levels.size(); ++k) {
    std::vector<std::vector<double>> scores(h_count, std::vector<double>(n, 0.0));
    for (std::size_t i = 0; i < n; ++i) score_results(hyperparameters, points, out.models[k], top, i, scores);
    judge(scores);
  }
  judge(cross_validated_scores(hyperparameters, points, top, gamma));
  for (const auto& per_level : agreements) out.weights.push_back(level_weights(per_level));
  return out;
}

}  // namespace dlx::searcher::detail
