// SPDX-License-Identifier: Apache-2.0
#include "synthetic.hpp"

#include <cmath>
#include <numbers>

namespace dlx::examples {

namespace {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {  // SplitMix64
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  double uniform() {  // (0, 1]
    return (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53;
  }
  double normal() {  // Box-Muller
    const double radius = std::sqrt(-2.0 * std::log(uniform()));
    return radius * std::cos(2.0 * std::numbers::pi * uniform());
  }

 private:
  std::uint64_t state_;
};

}  // namespace

SyntheticData generate_synthetic(std::uint64_t seed, std::int64_t rows, std::int64_t features) {
  Rng rng(seed);
  const auto d = static_cast<std::size_t>(features);
  std::vector<double> weights(d);
  for (auto& w : weights) w = rng.normal();
  const double bias = 0.1;
  SyntheticData out;
  out.x.resize(static_cast<std::size_t>(rows) * d);
  out.y.resize(static_cast<std::size_t>(rows));
  for (std::size_t row = 0; row < out.y.size(); ++row) {
    double logit = bias;
    for (std::size_t j = 0; j < d; ++j) {
      const double value = rng.normal();
      out.x[row * d + j] = value;
      logit += weights[j] * value;
    }
    out.y[row] = logit + 0.5 * rng.normal() > 0 ? 1.0 : 0.0;
  }
  return out;
}

}  // namespace dlx::examples
