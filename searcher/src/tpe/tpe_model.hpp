// SPDX-License-Identifier: Apache-2.0
#pragma once
// One TPE model (Bergstra et al. 2011): for every hyperparameter, l(x) fitted to the values the
// good trials of a split had and g(x) to the bad trials' values (tpe_parzen.hpp), each
// hyperparameter on its own (the original, univariate TPE). Values live in the model's space:
// real values on [minval, maxval]; log values on their exponents; integers on
// [minval - 0.5, maxval + 0.5], drawn rounded and scored by their rounding interval; categorical
// values as their index in `vals`. Constants and one-value ranges are not modelled.
#include <cstddef>
#include <map>
#include <optional>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlx/config/experiment.hpp"
#include "tpe_history.hpp"
#include "tpe_parzen.hpp"

namespace dlx::searcher::detail {

// trial -> its point in the models' space, one value per hyperparameter (tpe_point_in_space).
using TpePoints = std::map<int, std::vector<double>>;

// Whether hyperparameter `hp` has anything to model.
bool tpe_models(const config::Hyperparameter& hp);
// A point's value of `hp` in the model's space, and back (clamped to the range, integers rounded).
double tpe_to_space(const config::Hyperparameter& hp, const nlohmann::json& value);
nlohmann::json tpe_from_space(const config::Hyperparameter& hp, double x);
// Every hyperparameter's value in the model's space; NaN where it is not modelled, missing, or a
// category not in `vals`.
std::vector<double> tpe_point_in_space(const std::vector<config::Hyperparameter>& hyperparameters,
                                       const nlohmann::ordered_json& point);

class TpeModel {
 public:
  // `split`'s trials must all be in `points`.
  TpeModel(const std::vector<config::Hyperparameter>& hyperparameters, const TpePoints& points,
           const TpeSplit& split);

  // log l(x) - log g(x) of hyperparameter `h` (its index) at `x` in the model's space.
  double log_ratio(std::size_t h, double x) const;
  // A value of hyperparameter `h` drawn from l (integers rounded into range; categorical: an index).
  double draw(std::size_t h, SampleStream& stream) const;

 private:
  struct Numeric {
    ParzenEstimator good, bad;
    double low, high;
    bool integer;
  };
  struct Categorical {
    CategoricalEstimator good, bad;
  };
  using Densities = std::variant<std::monostate, Numeric, Categorical>;  // monostate: not modelled

  const std::vector<config::Hyperparameter>* hyperparameters_;
  std::vector<Densities> densities_;  // per hyperparameter
};

}  // namespace dlx::searcher::detail
