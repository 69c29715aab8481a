// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "dlx/searcher/asha_rungs.hpp"

using dlx::searcher::asha_rungs;

TEST_CASE("ASHA rung lengths and trial counts", "[searcher][asha]") {
  struct Row {
    int max_trials, divisor, max_rungs;
    std::int64_t max_length;
    std::vector<std::int64_t> lengths;
    std::vector<int> trials;
  };
  auto row = GENERATE(values<Row>({
      {16, 4, 3, 1000, {62, 250, 1000}, {16, 4, 1}},
      {27, 3, 4, 81, {3, 9, 27, 81}, {27, 9, 3, 1}},
      {10, 4, 5, 20, {1, 5, 20}, {10, 2, 1}},  // too short for 5 rungs: a lower one would train < 1 unit
      {8, 2, 1, 100, {100}, {8}},
      {3, 4, 3, 64, {4, 16, 64}, {3, 1, 1}},  // never fewer than one trial
  }));
  auto rungs = asha_rungs(row.max_trials, row.divisor, row.max_rungs, row.max_length);
  REQUIRE(rungs.size() == row.lengths.size());
  for (std::size_t k = 0; k < rungs.size(); ++k) {
    INFO("rung " << k);
    CHECK(rungs[k].index == static_cast<int>(k));
    CHECK(rungs[k].length == row.lengths[k]);
    CHECK(rungs[k].trials == row.trials[k]);
  }
}
