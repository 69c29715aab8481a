// SPDX-License-Identifier: Apache-2.0
#pragma once
// Deterministic synthetic data: features ~ N(0, 1); label = [w.x + b + noise > 0] for a hidden
// w ~ N(0, 1), b = 0.1 and noise ~ N(0, 0.25). The generator is spelled out (SplitMix64 +
// Box-Muller) so the data do not depend on the standard library's distributions.
#include <cstdint>
#include <vector>

namespace dlx::examples {

struct SyntheticData {
  std::vector<double> x;  // row-major [rows, features]
  std::vector<double> y;
};

SyntheticData generate_synthetic(std::uint64_t seed, std::int64_t rows, std::int64_t features);

}  // namespace dlx::examples
