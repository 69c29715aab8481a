// SPDX-License-Identifier: Apache-2.0
#pragma once
// The densities TPE compares (Bergstra et al. 2011): l(x) fitted to the good results, g(x) to the
// rest. Numeric hyperparameters get an adaptive Parzen estimator, a mixture of Gaussians truncated
// to the search range with one component per observation plus a broad prior component, each
// component as wide as the larger gap to its neighbours; categorical ones get category
// frequencies smoothed by one pseudo-count each, so no category ever has probability zero.
#include <cstddef>
#include <vector>

#include "sample_stream.hpp"

namespace dlx::searcher::detail {

class ParzenEstimator {
 public:
  // `observations` in the estimator's space (exponents for log hyperparameters), low < high.
  ParzenEstimator(std::vector<double> observations, double low, double high);

  double log_density(double x) const;
  // log of the probability of [from, to]: integers are scored by their rounding interval.
  double log_mass(double from, double to) const;
  // One draw: a component by weight, then its Gaussian restricted to [low, high].
  double draw(SampleStream& stream) const;

 private:
  struct Component {
    double mean = 0;
    double sigma = 1;
    double weight = 1;
    double inside = 1;  // the share of the untruncated Gaussian inside [low, high]
    double log_scale = 0;  // log(weight / total / (sigma sqrt(2 pi) inside)): the density's constant
  };
  std::vector<Component> components_;
  double low_, high_;
  double total_weight_ = 0;
};

class CategoricalEstimator {
 public:
  // `observations` are category indices below `categories`.
  CategoricalEstimator(const std::vector<std::size_t>& observations, std::size_t categories);

  double log_probability(std::size_t category) const;
  std::size_t draw(SampleStream& stream) const;

 private:
  std::vector<double> probabilities_;
};

}  // namespace dlx::searcher::detail
