// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where a new trial's hyperparameters come from. The random sampler draws trial t's point from
// the seed-keyed streams (the same point trial_plan.hpp gives, so `dlx plan` and the plugin agree
// with it). The model-based sampler (TPE, Bergstra et al. 2011) draws from densities fitted to
// the results observed so far, falling back to the random point until it has enough of them; a
// method (random, ASHA, adaptive ASHA) uses whichever the experiment names, so TPE inside ASHA is
// BOHB-style search. Like methods, samplers are deterministic functions of the experiment and the
// sequence of calls, and their state snapshots.
#include <cstdint>
#include <memory>

#include <nlohmann/json.hpp>

#include "dlx/config/experiment.hpp"

namespace dlx::searcher {

class Sampler {
 public:
  virtual ~Sampler() = default;
  // The hyperparameters of new trial `trial` (flat, file order).
  virtual nlohmann::ordered_json sample(int trial) = 0;
  // Trial `trial` (whose point sample() gave) reached `length` with the raw `metric`.
  virtual void observe(int trial, std::int64_t length, double metric) = 0;
  virtual nlohmann::json snapshot() const = 0;
  virtual void restore(const nlohmann::json& state) = 0;
};

std::unique_ptr<Sampler> make_sampler(const config::Experiment& experiment);

}  // namespace dlx::searcher
