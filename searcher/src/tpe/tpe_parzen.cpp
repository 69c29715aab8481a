// SPDX-License-Identifier: Apache-2.0
#include "tpe_parzen.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace dlx::searcher::detail {

namespace {

constexpr double kPriorWeight = 1.0;  // the prior counts like one observation (as in hyperopt)
constexpr int kMaxRejections = 64;    // draws outside [low, high] retried, then clamped

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::numbers::sqrt2); }

// Box-Muller: one standard normal from two uniforms of the stream.
double standard_normal(SampleStream& stream) {
  double radius = std::sqrt(-2.0 * std::log(1.0 - stream.next_unit()));  // 1 - u is in (0, 1]
  return radius * std::cos(2.0 * std::numbers::pi * stream.next_unit());
}

}  // namespace

ParzenEstimator::ParzenEstimator(std::vector<double> observations, double low, double high)
    : low_(low), high_(high) {
  const double range = high - low;
  const double prior_mean = 0.5 * (low + high);
  // Bandwidths from the sorted means (the prior's among them): each component as wide as the
  // larger gap to a neighbour, so isolated results spread out and clustered ones stay sharp.
  std::vector<double> means = observations;
  means.push_back(prior_mean);
  std::sort(means.begin(), means.end());
  const double min_sigma = range / std::min(100.0, 1.0 + static_cast<double>(observations.size()));
  bool prior_placed = false;
  for (std::size_t i = 0; i < means.size(); ++i) {
    Component component;
    component.mean = means[i];
    if (!prior_placed && means[i] == prior_mean) {
      prior_placed = true;  // the prior keeps the whole range as its width
      component.sigma = range;
      component.weight = kPriorWeight;
    } else {
      double left = i > 0 ? means[i] - means[i - 1] : means[i] - low;
      double right = i + 1 < means.size() ? means[i + 1] - means[i] : high - means[i];
      component.sigma = std::clamp(std::max(left, right), min_sigma, range);
      component.weight = 1.0;
    }
    component.inside = normal_cdf((high - component.mean) / component.sigma) -
                       normal_cdf((low - component.mean) / component.sigma);
    component.inside = std::max(component.inside, std::numeric_limits<double>::min());
    total_weight_ += component.weight;
    components_.push_back(component);
  }
  for (auto& c : components_) {
    c.log_scale = std::log(c.weight / total_weight_) - std::log(c.sigma) - 0.5 * std::log(2.0 * std::numbers::pi) -
                  std::log(c.inside);
  }
}

double ParzenEstimator::log_density(double x) const {
  // log(sum(exp(term))): first the largest term, then exp only of the terms that can matter. A
  // term more than kNegligible below the largest adds less than 1e-16 of it: far components
  // (most of them, when the results cluster) cost no exp.
  constexpr double kNegligible = 37;
  double peak = -std::numeric_limits<double>::infinity();
  for (const auto& c : components_) {
    const double z = (x - c.mean) / c.sigma;
    peak = std::max(peak, c.log_scale - 0.5 * z * z);
  }
  double sum = 0;
  for (const auto& c : components_) {
    const double z = (x - c.mean) / c.sigma;
    const double term = c.log_scale - 0.5 * z * z - peak;
    if (term > -kNegligible) sum += std::exp(term);
  }
  return peak + std::log(sum);
}

double ParzenEstimator::log_mass(double from, double to) const {
  from = std::max(from, low_);
  to = std::min(to, high_);
  double mass = 0;
  for (const auto& c : components_) {
    double share = normal_cdf((to - c.mean) / c.sigma) - normal_cdf((from - c.mean) / c.sigma);
    mass += c.weight / total_weight_ * share / c.inside;
  }
  return std::log(std::max(mass, std::numeric_limits<double>::min()));
}

double ParzenEstimator::draw(SampleStream& stream) const {
  double pick = stream.next_unit() * total_weight_;
  const Component* chosen = &components_.back();
  for (const auto& c : components_) {
    if (pick < c.weight) {
      chosen = &c;
      break;
    }
    pick -= c.weight;
  }
  double x = chosen->mean;
  for (int attempt = 0; attempt < kMaxRejections; ++attempt) {
    x = chosen->mean + chosen->sigma * standard_normal(stream);
    if (x >= low_ && x <= high_) return x;
  }
  return std::clamp(x, low_, high_);
}

CategoricalEstimator::CategoricalEstimator(const std::vector<std::size_t>& observations, std::size_t categories)
    : probabilities_(categories, 1.0) {  // one pseudo-count per category
  for (std::size_t category : observations) probabilities_[category] += 1.0;
  const double total = static_cast<double>(observations.size() + categories);
  for (double& p : probabilities_) p /= total;
}

double CategoricalEstimator::log_probability(std::size_t category) const {
  return std::log(probabilities_[category]);
}

std::size_t CategoricalEstimator::draw(SampleStream& stream) const {
  double pick = stream.next_unit();
  for (std::size_t category = 0; category < probabilities_.size(); ++category) {
    if (pick < probabilities_[category]) return category;
    pick -= probabilities_[category];
  }
  return probabilities_.size() - 1;
}

}  // namespace dlx::searcher::detail
