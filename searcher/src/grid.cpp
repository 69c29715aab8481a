#include <cmath>

#include "methods.hpp"

namespace dlx::searcher::detail {

using config::HyperparameterType;

std::vector<nlohmann::json> grid_axis(const config::Hyperparameter& hp) {
  const int count = hp.count.value_or(1);
  // Point k of `count` evenly spaced points from minval to maxval (count 1: minval).
  auto point = [&](int k) {
    return count == 1 ? hp.minval : hp.minval + (hp.maxval - hp.minval) * k / (count - 1);
  };
  std::vector<nlohmann::json> axis;
  switch (hp.type) {
    case HyperparameterType::constant:
      axis.push_back(hp.value);
      break;
    case HyperparameterType::categorical:
      axis = hp.vals;
      break;
    case HyperparameterType::integer:
      for (int k = 0; k < count; ++k) {
        auto value = static_cast<std::int64_t>(std::llround(point(k)));
        if (axis.empty() || axis.back().get<std::int64_t>() != value) axis.push_back(value);
      }
      break;
    case HyperparameterType::real:
      for (int k = 0; k < count; ++k) axis.push_back(point(k));
      break;
    case HyperparameterType::log:
      for (int k = 0; k < count; ++k) axis.push_back(std::pow(hp.base, point(k)));
      break;
  }
  return axis;
}

std::int64_t grid_size(const config::Experiment& experiment, std::int64_t limit) {
  std::int64_t size = 1;
  for (const auto& hp : experiment.hyperparameters) {
    size *= static_cast<std::int64_t>(grid_axis(hp).size());
    if (size > limit) return -1;
  }
  return size;
}

nlohmann::ordered_json grid_point(const config::Experiment& experiment, std::int64_t index) {
  // Mixed-radix decomposition of the index, last hyperparameter fastest.
  std::vector<nlohmann::json> values(experiment.hyperparameters.size());
  for (std::size_t i = experiment.hyperparameters.size(); i-- > 0;) {
    auto axis = grid_axis(experiment.hyperparameters[i]);
    auto radix = static_cast<std::int64_t>(axis.size());
    values[i] = axis[static_cast<std::size_t>(index % radix)];
    index /= radix;
  }
  nlohmann::ordered_json point = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < values.size(); ++i) point[experiment.hyperparameters[i].name] = values[i];
  return point;
}

}  // namespace dlx::searcher::detail
