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
// wrong way. With n results an unrelated model's tau (2 share - 1) still scatters around 0 by
// tau_null_error(n), so a share just above 1/2 from few results is no evidence: a level's weight
// is its tau beyond one such standard error, max(0, 2 share - 1 - margin), normalised to sum 1.
// When no level clears the margin (early on, when the top level has few results, or for a
// hyperparameter the metric does not depend on) every weight is 0: the models know nothing
// about that hyperparameter yet, and the sampler draws it from the prior (tpe_sampler.cpp)
// instead of exploiting noise.
#include <cstddef>
#include <optional>
#include <vector>

namespace dlx::searcher::detail {

// The share of ordered pairs (i, j), observed[i] < observed[j] (smaller is better), for which
// predicted[i] > predicted[j] (larger predicts better; equal predictions count half); none when no
// pair is strictly ordered. Both vectors have one entry per result.
std::optional<double> pair_agreement(const std::vector<double>& predicted, const std::vector<double>& observed);

// The standard deviation of Kendall's tau between n results and unrelated scores (no ties):
// sqrt(2 (2n + 5) / (9 n (n - 1))); 1 for fewer than 2 results.
double tau_null_error(std::size_t n);

// Weights from each level's agreement (shortest level first, the top level last): max(0,
// 2 share - 1 - margin) normalised to sum 1; all 0 when no level clears the margin or has a share.
std::vector<double> level_weights(const std::vector<std::optional<double>>& agreements, double margin);

}  // namespace dlx::searcher::detail
