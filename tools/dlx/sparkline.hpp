// SPDX-License-Identifier: Apache-2.0
#pragma once
// A series drawn as one line of Unicode block characters (▁▂▃▄▅▆▇█), for a table cell: the shape
// of a trial's validation curve at a glance, next to its last and best values.
#include <cstddef>
#include <span>
#include <string>

namespace dlx::cli {

// `values` without their NaN and infinite entries (a metric a row did not report is NaN), cut into
// at most `max_width` consecutive buckets of near-equal size (the mean of each), scaled so the
// lowest bucket is ▁ and the highest █. A series whose buckets are all equal is a flat middle line
// (▄: neither good nor bad). Fewer than 2 finite values: "" (one point has no shape).
std::string sparkline(std::span<const double> values, std::size_t max_width = 16);

}  // namespace dlx::cli
