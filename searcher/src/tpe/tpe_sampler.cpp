// SPDX-License-Identifier: Apache-2.0
// The TPE sampler (Bergstra et al. 2011, "Algorithms for Hyper-Parameter Optimization"), with
// the models of several lengths combined (multi-fidelity TPE, after MFES-HB, Li et al. AAAI 2021,
// and Hyper-Tune, Li et al. VLDB 2022).
//
// A new trial's point:
//   - startup: while tpe_history.hpp finds no level (no length with `startup_trials` results),
//     trial t gets the random sampler's point (random_point), so the start of a TPE experiment is
//     the start of the random one;
//   - then a third of the trials (BOHB's random fraction: a draw from stream (seed, trial,
//     kRandomShareSlot) below 1/3) still get the random sampler's point; the others are modelled:
//   - levels: every length with `startup_trials` results (ASHA's rungs as they fill), each with
//     the results of its newest kLevelCap trials (tpe_history.hpp);
//   - one model per level (tpe_model.hpp): for each hyperparameter independently (as the original
//     TPE), l(x) fitted to the values the level's good trials had and g(x) to its bad trials'
//     values (tpe_parzen.hpp);
//   - weights (tpe_ensemble.hpp, tpe_weights.hpp), per hyperparameter: level k's weight for
//     hyperparameter h comes from how well h's log l_k(x) - log g_k(x) alone orders the top
//     level's results (the longest length with enough results; the top level's own model is
//     judged on held-out results, 5-fold): the share of ordered pairs it gets right, as Kendall's
//     tau clipped at 0, normalised over the levels. A short length that is right about one
//     hyperparameter (a learning rate) and wrong about another (one that trades early progress for
//     final quality) informs the first and not the second;
//   - candidates: `candidates` values of h, each drawn from level k's l(x) with probability w_hk;
//     the one with the largest sum over k of w_hk (log l_k(x) - log g_k(x)) is kept (the first on
//     ties). With one level this is BOHB's single model at the largest length.
//   Real values are modelled on [minval, maxval]; log values on their exponents; integers on
//   [minval - 0.5, maxval + 0.5], rounded and scored by their rounding interval; categorical
//   values by smoothed frequencies; constants are never modelled.
// Every draw comes from the stream (seed, trial, kTpeSlotBase + hyperparameter index), so a
// trial's point depends on the experiment and on the results observed before it was sampled,
// never on a clock; the weights are recomputed from the results at every modelled point, so the
// state is the points and the results and nothing else (snapshot()). sample(t) records t's point
// (replacing any earlier one): observe() can only learn from trials whose point it knows, and
// ignores others.
#include <map>
#include <optional>
#include <vector>

#include "hparams_json.hpp"
#include "method_factories.hpp"
#include "methods.hpp"
#include "sample_stream.hpp"
#include "tpe_ensemble.hpp"
#include "tpe_history.hpp"
#include "tpe_model.hpp"
#include "json_fields.hpp"

namespace dlx::searcher::detail {

namespace {

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
// times random sampling's mean time to target (single-length model). With the combined levels
// (dlx's default rungs, 75 seeds) it makes no measurable difference: 0.955 with it, 0.959 without.
constexpr double kRandomFraction = 1.0 / 3.0;

// A level keeps the results of at most this many trials (its newest), so a modelled point costs
// O(levels x kLevelCap x (candidates + top-level results)) density terms however long the
// experiment runs (a Parzen estimator has one component per result, and ASHA's first rungs get a
// result from nearly every trial). 128 made bench_searcher's TPE ratio 0.99 against 0.955 at 256
// (75 seeds; noise of that order), at half the cost.
constexpr std::size_t kLevelCap = 256;

class TpeSampler final : public Sampler {
 public:
  explicit TpeSampler(const config::Experiment& experiment) : experiment_(experiment) {}

  nlohmann::ordered_json sample(int trial) override {
    const auto& options = experiment_.searcher.tpe;
    const auto levels = history_.levels(options.startup_trials, experiment_.searcher.smaller_is_better, kLevelCap);
    SampleStream coin(experiment_.seed, static_cast<std::uint64_t>(trial), kRandomShareSlot);
    const bool random = levels.empty() || coin.next_unit() < kRandomFraction;
    nlohmann::ordered_json point =
        random ? random_point(experiment_, trial)
               : model_point(trial, fit_ensemble(experiment_.hyperparameters, space_points_, levels, options.gamma));
    points_[trial] = point;
    space_points_[trial] = tpe_point_in_space(experiment_.hyperparameters, point);
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
    space_points_.clear();
    for (const auto& row : state.at("points")) {
      const int trial = json_as_int(row.at(0), "TPE snapshot");
      points_[trial] = hparams_from_json(row.at(1));
      space_points_[trial] = tpe_point_in_space(experiment_.hyperparameters, points_[trial]);
    }
    history_ = TpeHistory::from_json(state.at("results"));
  }

 private:
  nlohmann::ordered_json model_point(int trial, const TpeEnsemble& ensemble) const {
    nlohmann::ordered_json point = nlohmann::ordered_json::object();
    std::uint64_t slot = kTpeSlotBase;
    for (std::size_t h = 0; h < experiment_.hyperparameters.size(); ++h) {
      const auto& hp = experiment_.hyperparameters[h];
      SampleStream stream(experiment_.seed, static_cast<std::uint64_t>(trial), slot++);
      if (hp.type == config::HyperparameterType::constant) {
        point[hp.name] = hp.value;
        continue;
      }
      if (!tpe_models(hp)) {
        point[hp.name] = tpe_from_space(hp, hp.minval);  // nothing to choose
        continue;
      }
      const auto& weights = ensemble.weights[h];
      std::vector<std::size_t> used;  // the levels with a weight (level_weights gives one at least)
      for (std::size_t k = 0; k < weights.size(); ++k) {
        if (weights[k] > 0) used.push_back(k);
      }
      if (used.empty()) used.push_back(weights.size() - 1);
      std::optional<double> best;
      double best_score = 0;
      for (int i = 0; i < experiment_.searcher.tpe.candidates; ++i) {
        // A candidate comes from the weighted mixture of the levels' l(x) (one level: no draw spent).
        std::size_t from = used.front();
        if (used.size() > 1) {
          double pick = stream.next_unit();
          for (std::size_t k : used) {
            from = k;
            if (pick < weights[k]) break;
            pick -= weights[k];
          }
        }
        const double x = ensemble.models[from].draw(h, stream);
        double s = 0;
        for (std::size_t k : used) s += weights[k] * ensemble.models[k].log_ratio(h, x);
        if (!best || s > best_score) best = x, best_score = s;
      }
      point[hp.name] = tpe_from_space(hp, *best);
    }
    return point;
  }

  config::Experiment experiment_;
  TpeHistory history_;
  std::map<int, nlohmann::ordered_json> points_;  // every sampled trial's point
  TpePoints space_points_;                        // the same in the models' space (derived from points_)
};

}  // namespace

std::unique_ptr<Sampler> make_tpe_sampler(const config::Experiment& experiment) {
  return std::make_unique<TpeSampler>(experiment);
}

}  // namespace dlx::searcher::detail
