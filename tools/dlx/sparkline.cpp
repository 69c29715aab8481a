// SPDX-License-Identifier: Apache-2.0
#include "sparkline.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace dlx::cli {

namespace {

constexpr std::array<const char*, 8> kLevels{"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};

// Bucket b holds values [b*n/width, (b+1)*n/width): sizes differ by at most one, none is empty.
std::vector<double> bucket_means(const std::vector<double>& values, std::size_t width) {
  std::vector<double> means;
  const std::size_t n = values.size();
  for (std::size_t b = 0; b < width; ++b) {
    const std::size_t begin = b * n / width, end = (b + 1) * n / width;
    double sum = 0;
    for (std::size_t i = begin; i < end; ++i) sum += values[i];
    means.push_back(sum / static_cast<double>(end - begin));
  }
  return means;
}

}  // namespace

std::string sparkline(std::span<const double> values, std::size_t max_width) {
  std::vector<double> finite;
  std::copy_if(values.begin(), values.end(), std::back_inserter(finite), [](double v) { return std::isfinite(v); });
  if (finite.size() < 2 || max_width == 0) return "";
  const auto means = bucket_means(finite, std::min(finite.size(), max_width));
  const auto [low, high] = std::minmax_element(means.begin(), means.end());
  const double range = *high - *low;
  std::string line;
  for (double mean : means) {
    // Equal buckets (or a range past double's) have no scale: the flat middle line.
    if (!(range > 0) || !std::isfinite(range)) {
      line += kLevels[3];
      continue;
    }
    const auto level = static_cast<std::size_t>(std::lround((mean - *low) / range * (kLevels.size() - 1)));
    line += kLevels[std::min(level, kLevels.size() - 1)];
  }
  return line;
}

}  // namespace dlx::cli
