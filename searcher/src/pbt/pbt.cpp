// SPDX-License-Identifier: Apache-2.0
// Population-based training (Jaderberg et al. 2017; Determined's `pbt` searcher) as a Method.
//
// population_size members train for num_rounds rounds of length_per_round each. Member m's round
// r runs in ticket r x P + m; its trial is the member's own (it goes on from its checkpoint, same
// trial id) or, when the member was replaced, a new trial copied from a better member's checkpoint
// (pbt_round.hpp has the rules and Determined's trial numbering). So:
//   on_work_requested(ticket)  round 0: train at once. Round r > 0: wait until every member of
//                              round r - 1 has reported at its target or exited; then train the
//                              trial planned for it. Past the last ticket, or a slot that has
//                              already ended: none. Asking again gives the same answer.
//   on_validation              at or past the round's target: record the result; pause (the
//                              member may go on in the next round's ticket, from this checkpoint)
//                              or, in the last round, complete. Below it: continue to the target.
//   on_trial_exited            a trial that ends without a result counts as failed: its slot is
//                              replaced by a copy in the next round.
// The next round is planned once, by the event that settles the last member of a round, and kept
// in the state; an answer of wait changes nothing. The state is one record per planned ticket.
#include <algorithm>
#include <cmath>
#include <map>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "hparams_json.hpp"
#include "method_factories.hpp"
#include "pbt_round.hpp"
#include "json_fields.hpp"

namespace dlx::searcher::detail {

namespace {

struct PbtTrial {
  PbtTrialPlan plan;
  enum class Status { planned, reported, ended } status = Status::planned;  // ended: without a result
  double metric = 0;
  std::int64_t length = 0;  // where it reported
  bool issued = false;      // its ticket got the work: from then on an exit of the trial is this round's
};

const char* to_string(PbtTrial::Status status) {
  switch (status) {
    case PbtTrial::Status::planned: return "planned";
    case PbtTrial::Status::reported: return "reported";
    case PbtTrial::Status::ended: return "ended";
  }
  return "?";
}

class PbtMethod final : public Method {
 public:
  explicit PbtMethod(const config::Experiment& experiment)
      : experiment_(experiment),
        population_(experiment.searcher.pbt.population_size),
        rounds_(experiment.searcher.pbt.num_rounds) {
    append(plan_first_round(experiment_));
  }

  Work on_work_requested(int ticket) override {
    Work work;
    if (ticket < 0 || ticket >= population_ * rounds_) {
      work.reason = fmt::format("ticket {} is past PBT's {} x {} trials", ticket, population_, rounds_);
      return work;
    }
    const int round = ticket / population_;
    if (ticket >= static_cast<int>(trials_.size())) {
      work.kind = Work::Kind::wait;
      // A ticket two or more rounds ahead (many array tasks running at once, or a crafted
      // journal) finds the previous round not planned yet: its members are not there to count
      // (settled_in read past the plan, found by tests/fuzz/journal_fuzz.cpp).
      const bool previous_planned = static_cast<int>(trials_.size()) >= round * population_;
      work.reason = previous_planned
                        ? fmt::format("round {} waits for round {}: {} of {} members have finished", round,
                                      round - 1, settled_in(round - 1), population_)
                        : fmt::format("round {} waits for round {}, which is not planned yet", round, round - 1);
      return work;
    }
    PbtTrial& trial = trials_[static_cast<std::size_t>(ticket)];
    if (trial.status != PbtTrial::Status::planned) {
      work.reason = fmt::format("round {} of trial {} has already finished", round, trial.plan.trial);
      return work;
    }
    trial.issued = true;
    work.kind = Work::Kind::train;
    work.trial = trial.plan.trial;
    work.hparams = trial.plan.hparams;
    work.start_length = trial.plan.start_length;
    work.checkpoint_trial = trial.plan.checkpoint_trial;
    work.target_length = trial.plan.target_length;
    work.reason = trial.plan.reason;
    return work;
  }

  Decision on_validation(int trial_id, std::int64_t length, double metric) override {
    const int ticket = ticket_of(trial_id, "validation");
    PbtTrial& trial = trials_[static_cast<std::size_t>(ticket)];
    const int round = ticket / population_, member = ticket % population_;
    Decision decision;
    if (trial.status != PbtTrial::Status::planned) {
      decision.reason = fmt::format("trial {} has already finished its round", trial_id);
      return decision;
    }
    if (length < trial.plan.target_length) {
      decision.kind = Decision::Kind::continue_training;
      decision.target_length = trial.plan.target_length;
      decision.reason = fmt::format("round {}: member {} reported at length {}, before its round ends at {}", round,
                                    member, length, trial.plan.target_length);
      return decision;
    }
    trial.status = PbtTrial::Status::reported;
    trial.metric = metric;
    trial.length = length;
    // Paused, not completed: the next round's ticket resumes it from here unless it is replaced.
    decision.kind = round + 1 < rounds_ ? Decision::Kind::pause : Decision::Kind::complete;
    decision.reason = round + 1 < rounds_
                          ? fmt::format("round {}: member {} (trial {}) reached length {} with {} {:.4g}; round {} "
                                        "goes on from here or replaces it",
                                        round, member, trial_id, length, experiment_.searcher.metric, metric, round + 1)
                          : fmt::format("round {} (the last): member {} (trial {}) finished at length {} with {} {:.4g}",
                                        round, member, trial_id, length, experiment_.searcher.metric, metric);
    plan_after(round);
    return decision;
  }

  void on_trial_exited(int trial_id, ExitKind) override {
    const int ticket = ticket_of(trial_id, "exit");
    PbtTrial& trial = trials_[static_cast<std::size_t>(ticket)];
    // It reported first (a normal end), or the exit belongs to its previous round: a member that
    // paused there has its next round planned but not handed out yet.
    if (trial.status != PbtTrial::Status::planned || !trial.issued) return;
    trial.status = PbtTrial::Status::ended;
    plan_after(ticket / population_);
  }

  nlohmann::json snapshot() const override {
    nlohmann::json trials = nlohmann::json::array();
    for (const auto& trial : trials_) {
      const auto& plan = trial.plan;
      trials.push_back({{"trial", plan.trial},
                        {"hparams", hparams_to_json(plan.hparams)},
                        {"start_length", plan.start_length},
                        {"checkpoint_trial", plan.checkpoint_trial ? nlohmann::json(*plan.checkpoint_trial) : nlohmann::json()},
                        {"target_length", plan.target_length},
                        {"reason", plan.reason},
                        {"status", to_string(trial.status)},
                        // JSON has no NaN: a non-finite metric is null, and unusable either way.
                        {"metric", std::isfinite(trial.metric) ? nlohmann::json(trial.metric) : nlohmann::json()},
                        {"length", trial.length},
                        {"issued", trial.issued}});
    }
    return {{"trials", trials}};
  }

  void restore(const nlohmann::json& state) override {
    trials_.clear();
    current_ticket_.clear();
    next_trial_ = 0;
    for (const auto& row : state.at("trials")) {
      PbtTrial trial;
      trial.plan.trial = json_as_int(row.at("trial"), "PBT snapshot");
      trial.plan.hparams = hparams_from_json(row.at("hparams"));
      trial.plan.start_length = json_as_int64(row.at("start_length"), "PBT snapshot");
      if (!row.at("checkpoint_trial").is_null()) trial.plan.checkpoint_trial = json_as_int(row.at("checkpoint_trial"), "PBT snapshot");
      trial.plan.target_length = json_as_int64(row.at("target_length"), "PBT snapshot");
      trial.plan.reason = row.at("reason").get<std::string>();
      const auto status = row.at("status").get<std::string>();
      trial.status = status == "reported" ? PbtTrial::Status::reported
                     : status == "ended"  ? PbtTrial::Status::ended
                                          : PbtTrial::Status::planned;
      trial.metric = row.at("metric").is_null() ? std::numeric_limits<double>::quiet_NaN() : row.at("metric").get<double>();
      trial.length = json_as_int64(row.at("length"), "PBT snapshot");
      trial.issued = row.at("issued").get<bool>();
      if (trial.plan.trial < 0 || trial.plan.trial > static_cast<int>(trials_.size())) {  // ids grow by one at most
        throw Error(fmt::format("searcher: PBT snapshot: ticket {} trains trial {}", trials_.size(), trial.plan.trial));
      }
      append_one(std::move(trial));
    }
  }

 private:
  // The ticket of the trial's latest round.
  int ticket_of(int trial_id, const char* event) const {
    auto found = current_ticket_.find(trial_id);
    if (found == current_ticket_.end()) {
      throw Error(fmt::format("searcher: PBT got a {} for trial {}, which no ticket was given", event, trial_id));
    }
    return found->second;
  }

  int settled_in(int round) const {
    int settled = 0;
    for (int member = 0; member < population_; ++member) {
      settled += trials_[static_cast<std::size_t>(round * population_ + member)].status != PbtTrial::Status::planned;
    }
    return settled;
  }

  // Plans round + 1 once every trial of `round` has settled (and only once).
  void plan_after(int round) {
    const bool latest = static_cast<int>(trials_.size()) == (round + 1) * population_;
    if (!latest || round + 1 >= rounds_ || settled_in(round) < population_) return;
    std::vector<PbtOutcome> outcomes;
    for (int member = 0; member < population_; ++member) {
      const PbtTrial& trial = trials_[static_cast<std::size_t>(round * population_ + member)];
      outcomes.push_back({trial.plan.trial, trial.status == PbtTrial::Status::reported && std::isfinite(trial.metric),
                          trial.metric, trial.length, trial.plan.hparams});
    }
    append(plan_next_round(experiment_, round + 1, outcomes, next_trial_));
  }

  void append(std::vector<PbtTrialPlan> plans) {
    for (auto& plan : plans) append_one(PbtTrial{std::move(plan), PbtTrial::Status::planned, 0, 0, false});
  }

  void append_one(PbtTrial trial) {
    current_ticket_[trial.plan.trial] = static_cast<int>(trials_.size());
    next_trial_ = std::max(next_trial_, trial.plan.trial + 1);
    trials_.push_back(std::move(trial));
  }

  config::Experiment experiment_;
  int population_;
  int rounds_;
  std::vector<PbtTrial> trials_;      // index = ticket; rounds are appended as they are planned
  std::map<int, int> current_ticket_;  // trial id -> the ticket of its latest round
  int next_trial_ = 0;                 // the next new trial's id
};

}  // namespace

std::unique_ptr<Method> make_pbt_method(const config::Experiment& experiment) {
  return std::make_unique<PbtMethod>(experiment);
}

}  // namespace dlx::searcher::detail
