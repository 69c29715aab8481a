// SPDX-License-Identifier: Apache-2.0
#pragma once
// Did-you-mean suggestions, as the experiment parser makes them for unknown keys: the SDK uses the
// same rule for hyperparameter names a trainer asks for (dlx/hparams.hpp).
#include <string>
#include <string_view>
#include <vector>

namespace dlx::config {

// The closest of `candidates` to `word` when it is plausibly a typo, else "": at most a third of
// the longer word's letters differ (at least 1, at most 3 edits), and in names of several
// '_'-separated words no whole word is swapped for another ("slots_per_trial" is no typo of
// "nodes_per_trial"); on a tie, the candidate with the same first letter.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace dlx::config
