// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Method behind async_halving (one bracket) and adaptive_asha (several): tickets, new trials
// and their hyperparameters (from the experiment's sampler), and the brackets' decisions.
#include <map>
#include <memory>
#include <vector>

#include "asha_bracket.hpp"
#include "asha_layout.hpp"
#include "dlx/searcher/method.hpp"
#include "dlx/searcher/sampler.hpp"

namespace dlx::searcher::detail {

class AshaMethod final : public Method {
 public:
  AshaMethod(const config::Experiment& experiment, const std::vector<AshaBracketPlan>& brackets);

  Work on_work_requested(int ticket) override;
  Decision on_validation(int trial, std::int64_t length, double metric) override;
  void on_trial_exited(int trial, ExitKind how) override;
  nlohmann::json snapshot() const override;
  void restore(const nlohmann::json& state) override;

 private:
  struct TrialInfo {
    int bracket = 0;
    nlohmann::ordered_json hparams;
  };

  Work start_new_trial(int trial);
  Work issue(int ticket, Work work);
  const TrialInfo& info_of(int trial, const char* event) const;
  int active() const;

  bool stop_once_;
  int max_trials_;
  std::vector<AshaBracket> brackets_;
  std::vector<int> bracket_of_;  // new trial t -> its bracket
  std::unique_ptr<Sampler> sampler_;
  std::map<int, TrialInfo> trials_;
  std::map<int, Work> tickets_;  // ticket -> the train work it got (hyperparameters left out)
  int created_ = 0;              // promotion variant: trials created so far (the next trial id)
};

}  // namespace dlx::searcher::detail
