// SPDX-License-Identifier: Apache-2.0
#include "tpe_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace dlx::searcher::detail {

namespace {

using config::HyperparameterType;

std::optional<std::size_t> category_of(const config::Hyperparameter& hp, const nlohmann::json& value) {
  auto it = std::find(hp.vals.begin(), hp.vals.end(), value);
  if (it == hp.vals.end()) return std::nullopt;
  return static_cast<std::size_t>(it - hp.vals.begin());
}

}  // namespace

bool tpe_models(const config::Hyperparameter& hp) {
  if (hp.type == HyperparameterType::constant) return false;
  if (hp.type == HyperparameterType::categorical) return true;
  return hp.minval != hp.maxval;
}

double tpe_to_space(const config::Hyperparameter& hp, const nlohmann::json& value) {
  if (hp.type == HyperparameterType::categorical) {
    const auto index = category_of(hp, value);
    return index ? static_cast<double>(*index) : std::numeric_limits<double>::quiet_NaN();
  }
  double x = value.get<double>();
  return hp.type == HyperparameterType::log ? std::log(x) / std::log(hp.base) : x;
}

nlohmann::json tpe_from_space(const config::Hyperparameter& hp, double x) {
  if (hp.type == HyperparameterType::categorical) return hp.vals[static_cast<std::size_t>(x)];
  x = std::clamp(x, hp.minval, hp.maxval);
  switch (hp.type) {
    case HyperparameterType::integer: return static_cast<std::int64_t>(std::llround(x));
    case HyperparameterType::log: return std::pow(hp.base, x);
    default: return x;
  }
}

std::vector<double> tpe_point_in_space(const std::vector<config::Hyperparameter>& hyperparameters,
                                       const nlohmann::ordered_json& point) {
  std::vector<double> values;
  for (const auto& hp : hyperparameters) {
    auto it = point.find(hp.name);
    values.push_back(tpe_models(hp) && it != point.end() ? tpe_to_space(hp, *it)
                                                          : std::numeric_limits<double>::quiet_NaN());
  }
  return values;
}

TpeModel::TpeModel(const std::vector<config::Hyperparameter>& hyperparameters, const TpePoints& points,
                   const TpeSplit& split)
    : hyperparameters_(&hyperparameters) {
  for (std::size_t h = 0; h < hyperparameters.size(); ++h) {
    const auto& hp = hyperparameters[h];
    if (!tpe_models(hp)) {
      densities_.emplace_back(std::monostate{});
    } else if (hp.type == HyperparameterType::categorical) {
      auto fit = [&](const std::vector<int>& trials) {
        std::vector<std::size_t> indices;
        for (int trial : trials) {
          const double x = points.at(trial)[h];
          if (!std::isnan(x)) indices.push_back(static_cast<std::size_t>(x));
        }
        return CategoricalEstimator(indices, hp.vals.size());
      };
      densities_.emplace_back(Categorical{fit(split.good), fit(split.bad)});
    } else {
      const bool integer = hp.type == HyperparameterType::integer;
      const double low = integer ? hp.minval - 0.5 : hp.minval, high = integer ? hp.maxval + 0.5 : hp.maxval;
      auto fit = [&](const std::vector<int>& trials) {
        std::vector<double> xs;
        xs.reserve(trials.size());
        for (int trial : trials) {
          const double x = points.at(trial)[h];
          if (!std::isnan(x)) xs.push_back(x);
        }
        return ParzenEstimator(std::move(xs), low, high);
      };
      densities_.emplace_back(Numeric{fit(split.good), fit(split.bad), low, high, integer});
    }
  }
}

double TpeModel::log_ratio(std::size_t h, double x) const {
  const auto& densities = densities_[h];
  if (const auto* numeric = std::get_if<Numeric>(&densities)) {
    if (!numeric->integer) return numeric->good.log_density(x) - numeric->bad.log_density(x);
    const double k = std::round(x);
    return numeric->good.log_mass(k - 0.5, k + 0.5) - numeric->bad.log_mass(k - 0.5, k + 0.5);
  }
  if (const auto* categorical = std::get_if<Categorical>(&densities)) {
    const auto index = static_cast<std::size_t>(x);
    return categorical->good.log_probability(index) - categorical->bad.log_probability(index);
  }
  return 0;
}

double TpeModel::draw(std::size_t h, SampleStream& stream) const {
  const auto& densities = densities_[h];
  if (const auto* numeric = std::get_if<Numeric>(&densities)) {
    const double x = numeric->good.draw(stream);
    if (!numeric->integer) return x;
    const auto& hp = (*hyperparameters_)[h];
    return std::round(std::clamp(x, hp.minval, hp.maxval));
  }
  if (const auto* categorical = std::get_if<Categorical>(&densities)) {
    return static_cast<double>(categorical->good.draw(stream));
  }
  return 0;
}

}  // namespace dlx::searcher::detail
