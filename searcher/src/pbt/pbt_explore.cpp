// SPDX-License-Identifier: Apache-2.0
#include "pbt_explore.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "methods.hpp"
#include "sample_stream.hpp"

namespace dlx::searcher::detail {

namespace {

using config::HyperparameterType;

// The value range of a numeric hyperparameter (a log one's values, not its exponents).
std::pair<double, double> value_range(const config::Hyperparameter& hp) {
  if (hp.type != HyperparameterType::log) return {hp.minval, hp.maxval};
  double a = std::pow(hp.base, hp.minval), b = std::pow(hp.base, hp.maxval);
  return {std::min(a, b), std::max(a, b)};  // a base below 1 turns the range around
}

}  // namespace

Explored explore(const config::Experiment& experiment, const nlohmann::ordered_json& parent, int child_trial) {
  const auto& options = experiment.searcher.pbt;
  Explored out{parent, ""};
  std::vector<std::string> changes;
  nlohmann::ordered_json prior;  // computed only when something is resampled
  std::uint64_t slot = kPbtSlotBase + 1;
  for (const auto& hp : experiment.hyperparameters) {
    SampleStream stream(experiment.seed, static_cast<std::uint64_t>(child_trial), slot++);
    if (hp.type == HyperparameterType::constant) continue;
    if (stream.next_unit() < options.resample_probability) {
      if (prior.is_null()) prior = random_point(experiment, child_trial);
      out.hparams[hp.name] = prior[hp.name];
      changes.push_back(fmt::format("resamples {}", hp.name));
      continue;
    }
    if (hp.type == HyperparameterType::categorical) continue;
    const double factor = stream.next_unit() < 0.5 ? 1.0 + options.perturb_factor : 1.0 - options.perturb_factor;
    const auto [low, high] = value_range(hp);
    const double scaled = parent.at(hp.name).get<double>() * factor;
    double value = std::clamp(hp.type == HyperparameterType::integer ? std::round(scaled) : scaled, low, high);
    std::string note = fmt::format("perturbs {} x{:g}", hp.name, factor);
    if (value != (hp.type == HyperparameterType::integer ? std::round(scaled) : scaled)) {
      note += fmt::format(" (clamped to {:g})", value);
    }
    changes.push_back(note);
    if (hp.type == HyperparameterType::integer) {
      out.hparams[hp.name] = static_cast<std::int64_t>(value);
    } else {
      out.hparams[hp.name] = value;
    }
  }
  out.changes = fmt::format("{}", fmt::join(changes, ", "));
  return out;
}

}  // namespace dlx::searcher::detail
