// SPDX-License-Identifier: Apache-2.0
// single, grid and random as a Method: ticket t trains trial t, once, to max_length (or, without
// max_length, to the trainer's own length); nothing is ever stopped or paused. Hyperparameters:
// the grid point t (grid), the one point that single samples from the seed (random_point(0), as
// Determined's single samples ranged hyperparameters; constants are themselves), or the
// experiment's sampler's point for trial t (random;
// with a model-based sampler every validation is fed to it, so later trials learn from earlier
// ones). A ticket that asks again gets the same trial and hyperparameters, with no state change.
#include <map>
#include <optional>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "dlx/config/names.hpp"
#include "dlx/searcher/trial_plan.hpp"
#include "grid.hpp"
#include "hparams_json.hpp"
#include "method_factories.hpp"
#include "methods.hpp"
#include "json_fields.hpp"

namespace dlx::searcher::detail {

namespace {

class FixedTrialsMethod final : public Method {
 public:
  explicit FixedTrialsMethod(const config::Experiment& experiment)
      : experiment_(experiment),
        trial_count_(trial_count(experiment)),
        target_length_(experiment.searcher.max_length ? experiment.searcher.max_length->value : 0) {
    if (experiment.searcher.name == config::SearcherName::random) {
      sampler_ = make_sampler(experiment);
    } else if (experiment.searcher.name == config::SearcherName::grid) {
      grid_.emplace(experiment, config::kMaxTrials);  // built once: a point is then O(#hyperparameters)
    }
  }

  Work on_work_requested(int ticket) override {
    Work work;
    if (ticket < 0 || ticket >= trial_count_) {
      work.kind = Work::Kind::none;
      work.reason = fmt::format("ticket {} is past the experiment's {} trials", ticket, trial_count_);
      return work;
    }
    auto issued = issued_.find(ticket);
    if (issued == issued_.end()) issued = issued_.emplace(ticket, hparams_of(ticket)).first;
    work.kind = Work::Kind::train;
    work.trial = ticket;
    work.hparams = issued->second;
    work.target_length = target_length_;
    work.reason = target_length_ > 0
                      ? fmt::format("trial {} of {}: train to max_length {}", ticket + 1, trial_count_, target_length_)
                      : fmt::format("trial {} of {}: train to the trainer's own length", ticket + 1, trial_count_);
    return work;
  }

  Decision on_validation(int trial, std::int64_t length, double metric) override {
    if (!issued_.contains(trial)) {
      throw Error(fmt::format("searcher: validation for trial {}, which no ticket was given", trial));
    }
    if (sampler_) sampler_->observe(trial, length, metric);
    Decision decision;
    if (target_length_ > 0 && length < target_length_) {
      decision.kind = Decision::Kind::continue_training;
      decision.target_length = target_length_;
      decision.reason = fmt::format("length {} is short of max_length {}; continue", length, target_length_);
      return decision;
    }
    decision.kind = Decision::Kind::complete;
    decision.reason = target_length_ > 0 ? fmt::format("reached max_length {}; complete", target_length_)
                                         : std::string("no max_length: the trainer's own length is the end; complete");
    return decision;
  }

  void on_trial_exited(int, ExitKind) override {}  // nothing is held: every trial has its own ticket

  nlohmann::json snapshot() const override {
    nlohmann::json issued = nlohmann::json::array();
    for (const auto& [trial, hparams] : issued_) issued.push_back({trial, hparams_to_json(hparams)});
    return {{"issued", issued}, {"sampler", sampler_ ? sampler_->snapshot() : nlohmann::json()}};
  }

  void restore(const nlohmann::json& state) override {
    issued_.clear();
    for (const auto& entry : state.at("issued")) issued_[json_as_int(entry.at(0), "searcher snapshot")] = hparams_from_json(entry.at(1));
    if (sampler_) sampler_->restore(state.at("sampler"));
  }

 private:
  nlohmann::ordered_json hparams_of(int trial) {
    if (sampler_) return sampler_->sample(trial);
    if (grid_) return grid_->point(trial);
    return random_point(experiment_, trial);  // single
  }

  config::Experiment experiment_;
  int trial_count_;
  std::int64_t target_length_;
  std::unique_ptr<Sampler> sampler_;                 // random only
  std::optional<Grid> grid_;                         // grid only
  std::map<int, nlohmann::ordered_json> issued_;     // trial -> the hyperparameters its ticket got
};

}  // namespace

std::unique_ptr<Method> make_fixed_trials_method(const config::Experiment& experiment) {
  return std::make_unique<FixedTrialsMethod>(experiment);
}

}  // namespace dlx::searcher::detail
