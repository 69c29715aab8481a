// SPDX-License-Identifier: Apache-2.0
#pragma once
// How much each length's model counts when TPE combines them (multi-fidelity TPE, after MFES-HB,
// Li et al. AAAI 2021, and Hyper-Tune, Li et al. VLDB 2022).
//
// A model fitted at a short length learns what is good there, which is not what is good at the
// longest length when learning curves cross; a model fitted at the longest length sees few,
// noisy results. So each level's model is judged by how well it orders the results at the top
// level (the longest length with enough results): of the pairs of top-level results with one
// strictly better than the other, the share its scores order the same way (a generalized Kendall
// tau; a tie in scores counts half). The top level's own model is judged on held-out results
// (cross-validation), so it is not graded on the results it was fitted to.
// A share of 1/2 is what an unrelated model gets by chance, and below 1/2 a model points the
// wrong way: weight = max(0, 2 share - 1) (Kendall's tau clipped at zero), normalised to sum 1.
// A level with no comparable pair gets no weight; when no level has any, the top level gets it all
// (BOHB's single model).
#include <optional>
#include <vector>

namespace dlx::searcher::detail {

// The share of ordered pairs (i, j), observed[i] < observed[j] (smaller is better), for which
// predicted[i] > predicted[j] (larger predicts better; equal predictions count half); none when no
// pair is strictly ordered. Both vectors have one entry per result.
std::optional<double> pair_agreement(const std::vector<double>& predicted, const std::vector<double>& observed);

// Normalised weights from each level's agreement (shortest level first, the top level last).
std::vector<double> level_weights(const std::vector<std::optional<double>>& agreements);

}  // namespace dlx::searcher::detail
