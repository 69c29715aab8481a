// SPDX-License-Identifier: Apache-2.0
#pragma once
// Valid metrics logs crafted to cost a reader the most per byte (issue 31, finding 4): every
// record well-formed and checksummed, so a reader applies them all.
#include <cstddef>
#include <vector>

namespace dlx::record::testing {

// `names` metric names, one training row reporting each of them once, then empty training rows
// (26 bytes each: the cheapest record there is) until the log holds at least `bytes` bytes. As
// NaN-padded columns that is rows x names cells: 1 MiB with 4,096 names made 1.6 GB.
std::vector<std::byte> names_then_empty_rows(std::size_t names, std::size_t bytes);

// One metric, `increasing` training rows of steps 1, 2, ..., then rows that each repeat the
// last step until the log holds at least `bytes` bytes: each one replaces the row before it, so
// a reader that looks for the drop point from the first row does rows x repeats work.
std::vector<std::byte> repeated_steps(std::size_t increasing, std::size_t bytes);

}  // namespace dlx::record::testing
