// SPDX-License-Identifier: Apache-2.0
// The sparkline column of `dlx status` (tools/dlx/sparkline.hpp): exact strings for the cases a
// trial's validation curve can take.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "sparkline.hpp"

using dlx::cli::sparkline;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("sparkline: one block per value, lowest ▁ and highest █", "[sparkline]") {
  const std::vector<double> rising{1, 2, 3, 4, 5, 6, 7, 8};
  CHECK(sparkline(rising) == "▁▂▃▄▅▆▇█");
  const std::vector<double> falling{0.9, 0.5, 0.1};
  CHECK(sparkline(falling) == "█▅▁");  // halfway rounds up
  // Scaled between this series' own min and max, whatever their size.
  const std::vector<double> tiny{1e-9, 2e-9};
  CHECK(sparkline(tiny) == "▁█");
}

TEST_CASE("sparkline: a constant series is a flat middle line", "[sparkline]") {
  const std::vector<double> constant{0.5, 0.5, 0.5, 0.5};
  CHECK(sparkline(constant) == "▄▄▄▄");
}

TEST_CASE("sparkline: NaN and infinite values are skipped", "[sparkline]") {
  const std::vector<double> gaps{1, kNaN, 3, kInf, 2, -kInf};
  CHECK(sparkline(gaps) == "▁█▅");
}

TEST_CASE("sparkline: fewer than two values draw nothing", "[sparkline]") {
  CHECK(sparkline(std::vector<double>{}).empty());
  CHECK(sparkline(std::vector<double>{4.0}).empty());
  CHECK(sparkline(std::vector<double>{4.0, kNaN, kInf}).empty());
}

TEST_CASE("sparkline: a long series is the mean of each of at most 16 buckets", "[sparkline]") {
  // 32 values, pairs (0,0), (1,1), ... (15,15): 16 buckets of 2, means 0..15.
  std::vector<double> pairs;
  for (int i = 0; i < 16; ++i) pairs.insert(pairs.end(), 2, i);
  CHECK(sparkline(pairs) == "▁▁▂▂▃▃▄▄▅▅▆▆▇▇██");
  // The mean, not the first value: buckets (0,10), (10,0), (5,5) all have mean 5; then (0,0) and
  // (10,10) give the ends.
  const std::vector<double> means{0, 10, 10, 0, 5, 5, 0, 0, 10, 10};
  CHECK(sparkline(means, 5) == "▅▅▅▁█");
  // 100 values never make more than 16 characters (each is 3 bytes of UTF-8).
  std::vector<double> hundred(100);
  for (int i = 0; i < 100; ++i) hundred[i] = std::sin(i / 10.0);
  CHECK(sparkline(hundred).size() == 16 * 3);
}
