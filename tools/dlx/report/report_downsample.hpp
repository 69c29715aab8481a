// SPDX-License-Identifier: Apache-2.0
#pragma once
// A learning curve cut down to what a screen can show: per segment (the stretches between a
// trial's interruptions), min/max-preserving buckets, so that spikes survive and a curve of
// 10,000 points costs the page a few hundred.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dlx::cli::report {

struct CurvePoints {
  std::vector<std::int64_t> steps;
  std::vector<double> values;  // NaN after a segment: the line breaks there (a gap)
  std::size_t infinite = 0;    // +-inf values left out (a line cannot show them)
  std::size_t reported = 0;    // finite values in the input
};

// The finite points of (steps, values), at most about `max_points` of them (never fewer than 2
// per segment that has 2), split into segments at each step of `cuts` (a cut at c separates
// steps <= c from steps > c). In each segment, points are grouped into equal buckets by index
// and each bucket keeps its lowest and highest value, in step order; a segment's first and last
// points are always kept. NaN values (not reported in that row) are skipped, infinite ones
// counted in `infinite`. `steps` must be sorted (a trial's metric tables are).
CurvePoints downsample_min_max(const std::vector<std::int64_t>& steps, const std::vector<double>& values,
                               const std::vector<std::int64_t>& cuts, std::size_t max_points);

}  // namespace dlx::cli::report
