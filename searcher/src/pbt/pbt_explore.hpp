// SPDX-License-Identifier: Apache-2.0
#pragma once
// PBT's explore step (Jaderberg et al. 2017, with Determined's options): a copy of the parent's
// hyperparameters, each one resampled from its prior with probability resample_probability, else
// multiplied by 1 + perturb_factor or 1 - perturb_factor (equally likely), clamped to its range
// and rounded for integers. Categorical values change only when resampled; constants never.
// The draws come from the stream (seed, child trial, kPbtSlotBase + 1 + hyperparameter index);
// a resampled value is random_point(child trial)'s value, the prior draw no other step uses.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "dlx/config/experiment.hpp"

namespace dlx::searcher::detail {

// Stream slots 0..H-1 belong to random_point, TPE's start at 1 << 20; PBT's at 2 << 20: the
// parent choice, then one per hyperparameter.
inline constexpr std::uint64_t kPbtSlotBase = std::uint64_t{2} << 20;

struct Explored {
  nlohmann::ordered_json hparams;
  std::string changes;  // for people: "perturbs lr x1.2, resamples width" ("" when nothing changed)
};

Explored explore(const config::Experiment& experiment, const nlohmann::ordered_json& parent, int child_trial);

}  // namespace dlx::searcher::detail
