// The TPE sampler (Bergstra et al. 2011, "Algorithms for Hyper-Parameter Optimization").
//
// A new trial's point:
//   - startup: while tpe_history.hpp finds no model set, trial t gets the random sampler's point
//     (random_point), so the start of a TPE experiment is the start of the random one;
//   - then a third of the trials (BOHB's random fraction: a draw from stream (seed, trial,
//     kRandomShareSlot) below 1/3) still get the random sampler's point; the others are modelled:
//   - for each hyperparameter independently (as the original TPE): fit l(x) to the values
//     the good trials had and g(x) to the bad trials' values (tpe_parzen.hpp), draw `candidates`
//     values from l(x), and keep the one with the largest l(x)/g(x) (the first on ties). Real
//     values are modelled on [minval, maxval]; log values on their exponents; integers on
//     [minval - 0.5, maxval + 0.5], rounded and scored by their rounding interval; categorical
//     values by smoothed frequencies; constants are never modelled.
// Every draw comes from the stream (seed, trial, kTpeSlotBase + hyperparameter index), so a
// trial's point depends on the experiment and on the results observed before it was sampled,
// never on a clock. sample(t) records t's point (replacing any earlier one): observe() can only
// learn from trials whose point it knows, and ignores others.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "hparams_json.hpp"
#include "method_factories.hpp"
#include "methods.hpp"
#include "sample_stream.hpp"
#include "tpe_history.hpp"
#include "tpe_parzen.hpp"

namespace dlx::searcher::detail {

namespace {

using config::HyperparameterType;

// Stream slots 0..H-1 are random_point's; TPE's start here so its draws never reuse them.
constexpr std::uint64_t kTpeSlotBase = std::uint64_t{1} << 20;
// The draw that decides whether a modelled trial gets a random point instead (below the model's
// slots, above any random_point slot).
constexpr std::uint64_t kRandomShareSlot = kTpeSlotBase - 1;

// BOHB's rho (Falkner et al. 2018, section 4.1): a third of the points after startup are random.
// A model fitted to short-budget results can settle on what is good early, not at full length
// (learning curves cross); random points keep the search able to find what the model cannot
// see, and bound how much slower than random search a misled model can be. In bench_searcher
// (docs/benchmarks.md; 50 seeds, divisor 4, 4 rungs) this took TPE inside ASHA from 1.49 to 1.19
// times random sampling's mean time to target.
constexpr double kRandomFraction = 1.0 / 3.0;

// A numeric hyperparameter as the estimator sees it.
struct NumericSpace {
  double low, high;  // the modelled interval
  bool integer;
};

NumericSpace space_of(const config::Hyperparameter& hp) {
  if (hp.type == HyperparameterType::integer) return {hp.minval - 0.5, hp.maxval + 0.5, true};
  return {hp.minval, hp.maxval, false};
}

double to_space(const config::Hyperparameter& hp, const nlohmann::json& value) {
  double x = value.get<double>();
  return hp.type == HyperparameterType::log ? std::log(x) / std::log(hp.base) : x;
}

nlohmann::json from_space(const config::Hyperparameter& hp, double x) {
  x = std::clamp(x, hp.minval, hp.maxval);
  switch (hp.type) {
    case HyperparameterType::integer: return static_cast<std::int64_t>(std::llround(x));
    case HyperparameterType::log: return std::pow(hp.base, x);
    default: return x;
  }
}

class TpeSampler final : public Sampler {
 public:
  explicit TpeSampler(const config::Experiment& experiment) : experiment_(experiment) {}

  nlohmann::ordered_json sample(int trial) override {
    const auto& options = experiment_.searcher.tpe;
    TpeSplit split = history_.split(options.startup_trials, options.gamma, experiment_.searcher.smaller_is_better);
    SampleStream coin(experiment_.seed, static_cast<std::uint64_t>(trial), kRandomShareSlot);
    const bool random = split.good.empty() || coin.next_unit() < kRandomFraction;
    nlohmann::ordered_json point = random ? random_point(experiment_, trial) : model_point(trial, split);
    points_[trial] = point;
    return point;
  }

  void observe(int trial, std::int64_t length, double metric) override {
    if (points_.count(trial)) history_.record(trial, length, metric);
  }

  nlohmann::json snapshot() const override {
    // {"points": [[trial, [[name, value], ...]], ...], "results": [[trial, length, metric], ...]}
    nlohmann::json points = nlohmann::json::array();
    for (const auto& [trial, point] : points_) points.push_back({trial, hparams_to_json(point)});
    return {{"points", points}, {"results", history_.to_json()}};
  }

  void restore(const nlohmann::json& state) override {
    points_.clear();
    for (const auto& row : state.at("points")) points_[row.at(0).get<int>()] = hparams_from_json(row.at(1));
    history_ = TpeHistory::from_json(state.at("results"));
  }

 private:
  nlohmann::ordered_json model_point(int trial, const TpeSplit& split) const {
    nlohmann::ordered_json point = nlohmann::ordered_json::object();
    std::uint64_t slot = kTpeSlotBase;
    for (const auto& hp : experiment_.hyperparameters) {
      SampleStream stream(experiment_.seed, static_cast<std::uint64_t>(trial), slot++);
      if (hp.type == HyperparameterType::constant) {
        point[hp.name] = hp.value;
      } else if (hp.type == HyperparameterType::categorical) {
        point[hp.name] = hp.vals[best_category(hp, split, stream)];
      } else if (hp.minval == hp.maxval) {
        point[hp.name] = from_space(hp, hp.minval);  // nothing to choose
      } else {
        point[hp.name] = from_space(hp, best_numeric(hp, split, stream));
      }
    }
    return point;
  }

  std::vector<nlohmann::json> values_of(const config::Hyperparameter& hp, const std::vector<int>& trials) const {
    std::vector<nlohmann::json> values;
    for (int trial : trials) values.push_back(points_.at(trial).at(hp.name));
    return values;
  }

  double best_numeric(const config::Hyperparameter& hp, const TpeSplit& split, SampleStream& stream) const {
    const NumericSpace space = space_of(hp);
    auto fit = [&](const std::vector<int>& trials) {
      std::vector<double> xs;
      for (const auto& value : values_of(hp, trials)) xs.push_back(to_space(hp, value));
      return ParzenEstimator(std::move(xs), space.low, space.high);
    };
    const ParzenEstimator good = fit(split.good), bad = fit(split.bad);
    auto score = [&](double x) {
      if (!space.integer) return good.log_density(x) - bad.log_density(x);
      double k = std::round(x);
      return good.log_mass(k - 0.5, k + 0.5) - bad.log_mass(k - 0.5, k + 0.5);
    };
    std::optional<double> best;
    double best_score = 0;
    for (int i = 0; i < experiment_.searcher.tpe.candidates; ++i) {
      double x = good.draw(stream);
      if (space.integer) x = std::round(std::clamp(x, hp.minval, hp.maxval));
      double s = score(x);
      if (!best || s > best_score) best = x, best_score = s;
    }
    return *best;
  }

  std::size_t best_category(const config::Hyperparameter& hp, const TpeSplit& split, SampleStream& stream) const {
    auto fit = [&](const std::vector<int>& trials) {
      std::vector<std::size_t> indices;
      for (const auto& value : values_of(hp, trials)) {
        auto it = std::find(hp.vals.begin(), hp.vals.end(), value);
        if (it != hp.vals.end()) indices.push_back(static_cast<std::size_t>(it - hp.vals.begin()));
      }
      return CategoricalEstimator(indices, hp.vals.size());
    };
    const CategoricalEstimator good = fit(split.good), bad = fit(split.bad);
    std::optional<std::size_t> best;
    double best_score = 0;
    for (int i = 0; i < experiment_.searcher.tpe.candidates; ++i) {
      std::size_t category = good.draw(stream);
      double s = good.log_probability(category) - bad.log_probability(category);
      if (!best || s > best_score) best = category, best_score = s;
    }
    return *best;
  }

  config::Experiment experiment_;
  TpeHistory history_;
  std::map<int, nlohmann::ordered_json> points_;  // every sampled trial's point
};

}  // namespace

std::unique_ptr<Sampler> make_tpe_sampler(const config::Experiment& experiment) {
  return std::make_unique<TpeSampler>(experiment);
}

}  // namespace dlx::searcher::detail
