// SPDX-License-Identifier: Apache-2.0
#pragma once
// One ASHA bracket as a state machine over trial ids the method hands it: the rungs, every
// trial's phase, and the decisions of both variants (asha.cpp describes the protocol and rules).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "asha_rung_table.hpp"
#include "dlx/searcher/asha_rungs.hpp"
#include "dlx/searcher/method.hpp"

namespace dlx::searcher::detail {

struct AshaSettings {
  std::vector<Rung> rungs;
  double divisor = 4;
  bool stop_once = false;
  bool smaller_is_better = true;
  std::string metric;  // its name, for reasons
  int trials = 0;      // new trials this bracket will get
};

class AshaBracket {
 public:
  enum class Phase {
    training,   // works toward `rung`; the next event is its validation there (or an exit)
    paused,     // reported at `rung` (its checkpoint there is durable), told to pause; its ticket
                // ends; may be promoted later
    stopped,    // final phases
    completed,
    failed,
  };

  struct Promotion {
    int trial = -1;
    int from_rung = 0;
  };

  explicit AshaBracket(AshaSettings settings);

  const std::vector<Rung>& rungs() const { return settings_.rungs; }
  int started() const { return started_; }
  // Trials that may still report a result: those training.
  int active() const { return active_; }

  // A new trial, training from scratch toward rung 0.
  void start_trial(int trial);
  // Promotion variant: the paused trial to resume now, highest rung first; no state change.
  std::optional<Promotion> best_promotion() const;
  // Hands `promotion` to a ticket: the trial trains from its rung's length to the next rung's.
  // Fills everything of the Work but the hyperparameters.
  Work resume(const Promotion& promotion);

  Decision on_validation(int trial, std::int64_t length, double metric);
  void on_trial_exited(int trial, ExitKind how);

  nlohmann::json snapshot() const;
  void restore(const nlohmann::json& state);

 private:
  struct TrialState {
    Phase phase = Phase::training;
    int rung = 0;                 // the rung it trains toward, or the last one it reported at
    std::vector<double> results;  // raw metric per rung reached; NaN records a failure
  };

  RungTable::Entry entry(int trial, const TrialState& state, int rung) const;
  TrialState& state_of(int trial, const char* event);
  std::vector<bool> closed_rungs() const;
  int quota(int rung, bool closed) const;
  bool promotable(int rung, bool closed) const;
  std::string ranking(int trial, const TrialState& state, int rung, bool closed) const;
  Ranking standing(int trial, const TrialState& state, int rung, bool closed) const;
  void rebuild_indexes();

  AshaSettings settings_;
  std::map<int, TrialState> trials_;
  std::vector<RungTable> tables_;
  std::vector<int> training_toward_;  // per rung: trials in phase training toward it
  int started_ = 0;
  int active_ = 0;
};

}  // namespace dlx::searcher::detail
