// SPDX-License-Identifier: Apache-2.0
#include "grid.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "dlx/config/names.hpp"
#include "methods.hpp"

namespace dlx::searcher::detail {

using config::HyperparameterType;

namespace {

// When an int axis's doubles are exact enough to reason about: M * count <= 2^49, M the larger of
// |minval| and |maxval| (both whole numbers, so exact as doubles). Why that suffices:
//   d = maxval - minval and d * k are exact (below 2^53); the quotient q = d*k/(count-1) and the
//   sum minval + q are each rounded once, an error of at most 3M * 2^-53 in all. The exact value's
//   distance from a rounding boundary (n + 1/2) is a multiple of 1/(2(count-1)): zero, where
//   every step is exact (a half-integer below 2^50 is a double), or at least 1/(2 count), more
//   than 3M * 2^-53 when M * count <= 2^49. So llround of the computed point is llround of the
//   exact point, minval + k * step with step = d/(count-1), and then:
//   step >= 1: consecutive exact points are >= 1 apart, so their roundings all differ: the axis
//              has `count` values, value k = llround(point(k));
//   step <  1: consecutive roundings differ by at most 1 (even across zero, where half-way points
//              round away from it), from minval to maxval: every integer between them, once:
//              value k = minval + k.
constexpr double kExactLimit = static_cast<double>(std::int64_t{1} << 49);

bool exact_integer_axis(double minval, double maxval, int count) {
  const double largest = std::max(std::fabs(minval), std::fabs(maxval));
  return largest <= kExactLimit / count;
}

}  // namespace

GridAxis::GridAxis(const config::Hyperparameter& hp, std::int64_t limit)
    : minval_(hp.minval), maxval_(hp.maxval), base_(hp.base), count_(hp.count.value_or(1)) {
  switch (hp.type) {
    case HyperparameterType::constant:
      listed_.push_back(hp.value);
      break;
    case HyperparameterType::categorical:
      listed_ = hp.vals;
      break;
    case HyperparameterType::real:
      form_ = Form::real;
      size_ = count_;
      return;
    case HyperparameterType::log:
      form_ = Form::log;
      size_ = count_;
      return;
    case HyperparameterType::integer:
      if (count_ > 1 && exact_integer_axis(minval_, maxval_, count_)) {
        const bool spread = static_cast<double>(count_ - 1) <= maxval_ - minval_;
        form_ = spread ? Form::integer_spread : Form::integer_dense;
        size_ = spread ? count_ : static_cast<std::int64_t>(maxval_ - minval_) + 1;
        return;
      }
      // Huge bounds (or one point): the distinct values of the monotone sequence point(k), each
      // found by a binary search for where std::round(point(k)) changes. std::round and llround
      // agree wherever llround is defined, and std::round stays monotone where llround is not
      // (2^63, from maxval = INT64_MAX): equal runs of it have equal llround, and equal llround of
      // neighbouring runs are merged, which is exactly the consecutive de-duplication.
      for (int k = 0; k < count_ && static_cast<std::int64_t>(listed_.size()) <= limit;) {
        const double rounded = std::round(point(k));
        const auto value = static_cast<std::int64_t>(std::llround(point(k)));
        if (listed_.empty() || listed_.back().get<std::int64_t>() != value) listed_.push_back(value);
        int low = k + 1, high = count_;  // the first k' > k whose rounding differs
        while (low < high) {
          const int middle = low + (high - low) / 2;
          if (std::round(point(middle)) == rounded) {
            low = middle + 1;
          } else {
            high = middle;
          }
        }
        k = low;
      }
      break;
  }
  size_ = static_cast<std::int64_t>(listed_.size());
}

double GridAxis::point(std::int64_t k) const {
  // The materialised definition's expression, operand for operand (int k and count - 1): the
  // same doubles.
  // count 1 is the midpoint, as in Determined's grid.go ((minval + maxval) / 2; an int axis rounds
  // it half away from zero, like Go's math.Round).
  return count_ == 1 ? (minval_ + maxval_) / 2.0 : minval_ + (maxval_ - minval_) * static_cast<int>(k) / (count_ - 1);
}

nlohmann::json GridAxis::value(std::int64_t k) const {
  switch (form_) {
    case Form::listed: return listed_[static_cast<std::size_t>(k)];
    case Form::integer_spread: return static_cast<std::int64_t>(std::llround(point(k)));
    case Form::integer_dense: return static_cast<std::int64_t>(minval_) + k;
    case Form::real: return point(k);
    case Form::log: return std::pow(base_, point(k));
  }
  return nullptr;
}

Grid::Grid(const config::Experiment& experiment, std::int64_t limit) {
  std::set<std::string_view> seen;
  for (const auto& hp : experiment.hyperparameters) {
    // An axis needs no more values than fit beside the ones before it.
    axes_.emplace_back(hp, limit / size_);
    names_.push_back(hp.name);
    unique_names_ = unique_names_ && seen.insert(hp.name).second;
    size_ *= axes_.back().size();
    if (size_ > limit) {
      size_ = -1;
      return;
    }
  }
}

nlohmann::ordered_json Grid::point(std::int64_t index) const {
  // Mixed-radix decomposition of the index, last hyperparameter fastest.
  std::vector<nlohmann::json> values(axes_.size());
  for (std::size_t i = axes_.size(); i-- > 0;) {
    const auto radix = axes_[i].size();
    values[i] = axes_[i].value(index % radix);
    index /= radix;
  }
  nlohmann::ordered_json point = nlohmann::ordered_json::object();
  auto& members = point.get_ref<nlohmann::ordered_json::object_t&>();
  members.reserve(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (unique_names_) {
      members.emplace_back(names_[i], std::move(values[i]));  // what operator[] does, without its search
    } else {
      point[names_[i]] = std::move(values[i]);
    }
  }
  return point;
}

std::int64_t grid_size(const config::Experiment& experiment, std::int64_t limit) {
  return Grid(experiment, limit).size();
}

nlohmann::ordered_json grid_point(const config::Experiment& experiment, std::int64_t index) {
  return Grid(experiment, config::kMaxTrials).point(index);
}

}  // namespace dlx::searcher::detail
