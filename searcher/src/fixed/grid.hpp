// SPDX-License-Identifier: Apache-2.0
#pragma once
// The grid searcher's points without materialising its axes: planning is linear in the number of
// trials, and one trial's point costs O(#hyperparameters) (a slurmstepd plans one trial; `count`
// may be 1,000,000 per hyperparameter). Rebuilding every axis for every point, as before, made
// `dlx plan` of one `count: 20000` hyperparameter take 98 s, and 1,000 hyperparameters cost 20 s of
// CPU in every step.
//
// The values are exactly the ones of the materialised definition, and in the same order
// (determinism is a contract: trial i of a grid never changes). For an axis of `count` points:
//   point(k) = count == 1 ? (minval + maxval) / 2 : minval + (maxval - minval) * k / (count - 1)
// (in double; Determined's grid.go, whose count-1 point is the midpoint of the range)
//   double:  point(k)        log: pow(base, point(k))
//   int:     llround(point(k)) for k = 0..count-1, consecutive equal values kept once.
// An int axis is computed arithmetically when its doubles are exact enough (see IntegerAxis in
// grid.cpp for the proof), else its distinct values are found by binary search on the monotone
// sequence, at O(log count) per value and never more than the grid's limit of them.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlx/config/experiment.hpp"

namespace dlx::searcher::detail {

// One hyperparameter's grid values.
class GridAxis {
 public:
  // An int axis with more than `limit` values is cut at limit + 1 (enough to say it is too large).
  GridAxis(const config::Hyperparameter& hp, std::int64_t limit);
  std::int64_t size() const { return size_; }
  nlohmann::json value(std::int64_t k) const;  // 0 <= k < size()

 private:
  enum class Form { listed, integer_spread, integer_dense, real, log };
  double point(std::int64_t k) const;

  Form form_ = Form::listed;
  std::int64_t size_ = 0;
  double minval_ = 0, maxval_ = 0, base_ = 10;
  int count_ = 1;
  std::vector<nlohmann::json> listed_;  // const, categorical, and int axes found by search
};

// The cartesian product of the axes in file order, the last hyperparameter fastest.
class Grid {
 public:
  // size() is -1 when the product exceeds `limit`.
  Grid(const config::Experiment& experiment, std::int64_t limit);
  std::int64_t size() const { return size_; }
  nlohmann::ordered_json point(std::int64_t index) const;  // 0 <= index < size()

 private:
  std::vector<std::string> names_;
  std::vector<GridAxis> axes_;
  std::int64_t size_ = 1;
  bool unique_names_ = true;  // then a point is built by appending (no lookup per name)
};

}  // namespace dlx::searcher::detail
