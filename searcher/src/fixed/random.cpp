#include <cmath>

#include "methods.hpp"
#include "sample_stream.hpp"

namespace dlx::searcher::detail {

using config::HyperparameterType;

nlohmann::ordered_json random_point(const config::Experiment& experiment, std::int64_t trial) {
  nlohmann::ordered_json point = nlohmann::ordered_json::object();
  std::uint64_t slot = 0;
  for (const auto& hp : experiment.hyperparameters) {
    // One stream per (trial, hyperparameter): adding a hyperparameter at the end of the file
    // leaves the values of the others unchanged.
    SampleStream stream(experiment.seed, static_cast<std::uint64_t>(trial), slot++);
    switch (hp.type) {
      case HyperparameterType::constant:
        point[hp.name] = hp.value;
        break;
      case HyperparameterType::categorical:
        point[hp.name] = hp.vals[stream.next_below(hp.vals.size())];
        break;
      case HyperparameterType::integer: {
        auto span = static_cast<std::uint64_t>(hp.maxval - hp.minval) + 1;
        point[hp.name] = static_cast<std::int64_t>(hp.minval) + static_cast<std::int64_t>(stream.next_below(span));
        break;
      }
      case HyperparameterType::real:
        point[hp.name] = hp.minval + (hp.maxval - hp.minval) * stream.next_unit();
        break;
      case HyperparameterType::log:
        point[hp.name] = std::pow(hp.base, hp.minval + (hp.maxval - hp.minval) * stream.next_unit());
        break;
    }
  }
  return point;
}

}  // namespace dlx::searcher::detail
