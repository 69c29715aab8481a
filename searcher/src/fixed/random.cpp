// SPDX-License-Identifier: Apache-2.0
// The random point of a trial: each hyperparameter drawn from its own stream of the seed.
#include <cmath>
#include <cstdint>
#include <utility>

#include "methods.hpp"
#include "ordered_members.hpp"
#include "sample_stream.hpp"

namespace dlx::searcher::detail {

using config::HyperparameterType;

namespace {

nlohmann::ordered_json sample(const config::Hyperparameter& hp, SampleStream& stream) {
  switch (hp.type) {
    case HyperparameterType::constant:
      return hp.value;
    case HyperparameterType::categorical:
      return hp.vals[stream.next_below(hp.vals.size())];
    case HyperparameterType::integer: {
      auto span = static_cast<std::uint64_t>(hp.maxval - hp.minval) + 1;
      return static_cast<std::int64_t>(hp.minval) + static_cast<std::int64_t>(stream.next_below(span));
    }
    case HyperparameterType::real:
      return hp.minval + (hp.maxval - hp.minval) * stream.next_unit();
    case HyperparameterType::log:
      return std::pow(hp.base, hp.minval + (hp.maxval - hp.minval) * stream.next_unit());
  }
  return nullptr;
}

}  // namespace

nlohmann::ordered_json random_point(const config::Experiment& experiment, std::int64_t trial) {
  OrderedMembers point(experiment.hyperparameters.size());  // linear in the hyperparameters
  std::uint64_t slot = 0;
  for (const auto& hp : experiment.hyperparameters) {
    // One stream per (trial, hyperparameter): adding a hyperparameter at the end of the file
    // leaves the values of the others unchanged.
    SampleStream stream(experiment.seed, static_cast<std::uint64_t>(trial), slot++);
    point.set(hp.name, sample(hp, stream));
  }
  return std::move(point).take();
}

}  // namespace dlx::searcher::detail
