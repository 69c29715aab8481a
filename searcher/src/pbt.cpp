// Population-based training (Jaderberg et al. 2017; Determined's `pbt` searcher) as a Method.
//
// population_size members train for num_rounds rounds of length_per_round each. Every round of a
// member is a new trial (pbt_round.hpp: member m of round r is trial and ticket r x P + m), which
// starts from a checkpoint: its own previous trial's, or a better member's (exploit). So:
//   on_work_requested(ticket)  round 0: train at once. Round r > 0: wait until every trial of
//                              round r - 1 has reported at its target or exited; then train the
//                              trial planned for it. Past the last ticket, or a trial that has
//                              already ended: none. Asking again gives the same answer.
//   on_validation              at or past the trial's target: record the result and complete
//                              (the member goes on in the next round's trial); below it:
//                              continue to the target.
//   on_trial_exited            a trial that ends without a result counts as failed: its member
//                              is replaced by an exploit in the next round.
// The next round is planned once, by the event that settles the last trial of a round, and kept
// in the state; an answer of wait changes nothing. The state is one record per planned trial.
#include <cmath>
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
    const PbtTrial& trial = trials_[static_cast<std::size_t>(ticket)];
    if (trial.status != PbtTrial::Status::planned) {
      work.reason = fmt::format("trial {} has already finished", ticket);
      return work;
    }
    work.kind = Work::Kind::train;
    work.trial = ticket;
    work.hparams = trial.plan.hparams;
    work.start_length = trial.plan.start_length;
    work.checkpoint_trial = trial.plan.checkpoint_trial;
    work.target_length = trial.plan.target_length;
    work.reason = trial.plan.reason;
    return work;
  }

  Decision on_validation(int trial_id, std::int64_t length, double metric) override {
    PbtTrial& trial = known(trial_id, "validation");
    const int round = trial_id / population_, member = trial_id % population_;
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
    decision.kind = Decision::Kind::complete;
    decision.reason = round + 1 < rounds_
                          ? fmt::format("round {}: member {} reached length {} with {} {:.4g}; round {} goes on from here",
                                        round, member, length, experiment_.searcher.metric, metric, round + 1)
                          : fmt::format("round {} (the last): member {} finished at length {} with {} {:.4g}", round,
                                        member, length, experiment_.searcher.metric, metric);
    plan_after(round);
    return decision;
  }

  void on_trial_exited(int trial_id, ExitKind) override {
    PbtTrial& trial = known(trial_id, "exit");
    if (trial.status != PbtTrial::Status::planned) return;  // it reported first: a normal end
    trial.status = PbtTrial::Status::ended;
    plan_after(trial_id / population_);
  }

  nlohmann::json snapshot() const override {
    nlohmann::json trials = nlohmann::json::array();
    for (const auto& trial : trials_) {
      const auto& plan = trial.plan;
      trials.push_back({{"hparams", hparams_to_json(plan.hparams)},
                        {"start_length", plan.start_length},
                        {"checkpoint_trial", plan.checkpoint_trial ? nlohmann::json(*plan.checkpoint_trial) : nlohmann::json()},
                        {"target_length", plan.target_length},
                        {"reason", plan.reason},
                        {"status", to_string(trial.status)},
                        // JSON has no NaN: a non-finite metric is null, and unusable either way.
                        {"metric", std::isfinite(trial.metric) ? nlohmann::json(trial.metric) : nlohmann::json()},
                        {"length", trial.length}});
    }
    return {{"trials", trials}};
  }

  void restore(const nlohmann::json& state) override {
    trials_.clear();
    for (const auto& row : state.at("trials")) {
      PbtTrial trial;
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
      trials_.push_back(std::move(trial));
    }
  }

 private:
  PbtTrial& known(int trial_id, const char* event) {
    if (trial_id < 0 || trial_id >= static_cast<int>(trials_.size())) {
      throw Error(fmt::format("searcher: PBT got a {} for trial {}, which no ticket was given", event, trial_id));
    }
    return trials_[static_cast<std::size_t>(trial_id)];
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
      outcomes.push_back({trial.status == PbtTrial::Status::reported && std::isfinite(trial.metric), trial.metric,
                          trial.length, trial.plan.hparams});
    }
    append(plan_next_round(experiment_, round + 1, outcomes));
  }

  void append(std::vector<PbtTrialPlan> plans) {
    for (auto& plan : plans) trials_.push_back(PbtTrial{std::move(plan), PbtTrial::Status::planned, 0, 0});
  }

  config::Experiment experiment_;
  int population_;
  int rounds_;
  std::vector<PbtTrial> trials_;  // index = trial id; rounds are appended as they are planned
};

}  // namespace

std::unique_ptr<Method> make_pbt_method(const config::Experiment& experiment) {
  return std::make_unique<PbtMethod>(experiment);
}

}  // namespace dlx::searcher::detail
