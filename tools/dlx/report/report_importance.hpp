// SPDX-License-Identifier: Apache-2.0
#pragma once
// Hyperparameter importance for the report: how much of the spread of the trials' results each
// hyperparameter explains on its own. The first-order term of a functional ANOVA, with each
// hyperparameter's marginal estimated by binning instead of a fitted model (fANOVA fits a random
// forest; with a few dozen trials bins are as honest and need no model):
//   1. the results are replaced by their ranks (1..n, ties averaged), so a diverged trial's inf
//      or a huge loss weighs as one rank, not as its magnitude;
//   2. each hyperparameter's values are grouped: a value of its own for strings, booleans and
//      numbers with at most kMaxBins distinct values, else kMaxBins bins of equal counts by
//      value (quantiles, so a log-scaled range is binned as evenly as a linear one);
//   3. its score is epsilon squared, the bias-corrected share of the ranks' variance between the
//      groups: (SS_between - (k - 1) MS_within) / (SS_total + MS_within), at least 0. Plain
//      eta squared grows with the number of groups even for pure noise; epsilon squared is ~0
//      for a hyperparameter that does not matter.
// Scores are not additive (interactions are not counted) and mean little below kMinTrials
// trials, so the report shows none below that.
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dlx::cli::report {

inline constexpr std::size_t kMinTrials = 10;
inline constexpr std::size_t kMaxBins = 5;

struct ImportanceInput {
  std::vector<std::string> names;               // hyperparameters
  std::vector<std::vector<nlohmann::json>> values;  // per trial, one value per name (null: absent)
  std::vector<double> results;                  // per trial, its result (finite or infinite, never NaN)
};

struct Importance {
  std::string name;
  double score = 0;  // epsilon squared, 0..1
  std::size_t groups = 0;
};

// One score per name that varies between trials (a constant explains nothing and is left out),
// highest first. Empty below kMinTrials trials.
std::vector<Importance> hyperparameter_importance(const ImportanceInput& input);

}  // namespace dlx::cli::report
