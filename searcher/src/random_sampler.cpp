// SPDX-License-Identifier: Apache-2.0
// The random sampler: trial t's point is trial_plan's random point, whatever happened before.
#include "method_factories.hpp"
#include "methods.hpp"

namespace dlx::searcher::detail {

namespace {

class RandomSampler final : public Sampler {
 public:
  explicit RandomSampler(const config::Experiment& experiment) : experiment_(experiment) {}
  nlohmann::ordered_json sample(int trial) override { return random_point(experiment_, trial); }
  void observe(int, std::int64_t, double) override {}  // results do not change random points
  nlohmann::json snapshot() const override { return nlohmann::json::object(); }
  void restore(const nlohmann::json&) override {}

 private:
  config::Experiment experiment_;
};

}  // namespace

std::unique_ptr<Sampler> make_random_sampler(const config::Experiment& experiment) {
  return std::make_unique<RandomSampler>(experiment);
}

}  // namespace dlx::searcher::detail
