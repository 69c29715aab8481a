// SPDX-License-Identifier: Apache-2.0
#include "report_downsample.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dlx::cli::report {
namespace {

// Indices [first, last) of one segment reduced to about `budget` indices.
void bucket_segment(const std::vector<std::int64_t>& steps, const std::vector<double>& values,
                    const std::vector<std::size_t>& points, std::size_t first, std::size_t last, std::size_t budget,
                    CurvePoints& out) {
  const std::size_t count = last - first;
  const auto keep = [&](std::size_t k) {
    out.steps.push_back(steps[points[k]]);
    out.values.push_back(values[points[k]]);
  };
  if (count <= std::max<std::size_t>(budget, 2)) {
    for (std::size_t k = first; k < last; ++k) keep(k);
    return;
  }
  keep(first);
  const std::size_t inner_first = first + 1, inner_last = last - 1;
  const std::size_t buckets = std::max<std::size_t>(1, (budget - 2) / 2);
  const std::size_t inner = inner_last - inner_first;
  for (std::size_t b = 0; b < buckets; ++b) {
    const std::size_t from = inner_first + inner * b / buckets, to = inner_first + inner * (b + 1) / buckets;
    if (from >= to) continue;
    std::size_t low = from, high = from;
    for (std::size_t k = from; k < to; ++k) {
      if (values[points[k]] < values[points[low]]) low = k;
      if (values[points[k]] > values[points[high]]) high = k;
    }
    keep(std::min(low, high));
    if (low != high) keep(std::max(low, high));
  }
  keep(last - 1);
}

}  // namespace

CurvePoints downsample_min_max(const std::vector<std::int64_t>& steps, const std::vector<double>& values,
                               const std::vector<std::int64_t>& cuts, std::size_t max_points) {
  CurvePoints out;
  std::vector<std::size_t> points;  // indices of the finite values
  const std::size_t rows = std::min(steps.size(), values.size());
  for (std::size_t i = 0; i < rows; ++i) {
    if (std::isinf(values[i])) {
      ++out.infinite;
    } else if (!std::isnan(values[i])) {
      points.push_back(i);
    }
  }
  out.reported = points.size();
  if (points.empty()) return out;

  // Segment boundaries: [bounds[s], bounds[s + 1]) in `points`.
  std::vector<std::size_t> bounds{0};
  for (std::size_t k = 1; k < points.size(); ++k) {
    const auto before = steps[points[k - 1]], after = steps[points[k]];
    const bool cut = std::any_of(cuts.begin(), cuts.end(), [&](std::int64_t c) { return before <= c && c < after; });
    if (cut) bounds.push_back(k);
  }
  bounds.push_back(points.size());

  const double share = static_cast<double>(std::max<std::size_t>(max_points, 2)) / static_cast<double>(points.size());
  for (std::size_t s = 0; s + 1 < bounds.size(); ++s) {
    if (s > 0) {  // the gap: a point between the segments with no value
      out.steps.push_back(steps[points[bounds[s]]]);
      out.values.push_back(std::numeric_limits<double>::quiet_NaN());
    }
    const auto budget = static_cast<std::size_t>(share * static_cast<double>(bounds[s + 1] - bounds[s]));
    bucket_segment(steps, values, points, bounds[s], bounds[s + 1], std::max<std::size_t>(budget, 2), out);
  }
  return out;
}

}  // namespace dlx::cli::report
