// SPDX-License-Identifier: Apache-2.0
#include "asha_method.hpp"

#include <optional>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "hparams_json.hpp"
#include "json_fields.hpp"

namespace dlx::searcher::detail {

AshaMethod::AshaMethod(const config::Experiment& experiment, const std::vector<AshaBracketPlan>& brackets)
    : stop_once_(experiment.searcher.asha.stop_once),
      max_trials_(0),
      bracket_of_(spread_trials_over_brackets(brackets)),
      sampler_(make_sampler(experiment)) {
  for (const auto& plan : brackets) {
    AshaSettings settings;
    settings.rungs = plan.rungs;
    settings.divisor = experiment.searcher.asha.divisor;
    settings.stop_once = stop_once_;
    settings.smaller_is_better = experiment.searcher.smaller_is_better;
    settings.metric = experiment.searcher.metric;
    settings.trials = plan.trials;
    brackets_.emplace_back(std::move(settings));
    max_trials_ += plan.trials;
  }
}

Work AshaMethod::on_work_requested(int ticket) {
  // A ticket that asks again (its array task restarted) gets the same work; nothing changes.
  if (auto given = tickets_.find(ticket); given != tickets_.end()) {
    Work work = given->second;
    work.hparams = trials_.at(work.trial).hparams;
    return work;
  }
  Work work;
  if (stop_once_) {  // one ticket per trial: ticket t is trial t
    if (ticket < 0 || ticket >= max_trials_) {
      work.reason = fmt::format("ticket {} is past the {} trials (one ticket per trial)", ticket, max_trials_);
      return work;
    }
    return issue(ticket, start_new_trial(ticket));
  }
  // Promotion variant: the highest promotion in any bracket (ties: the lower bracket) ...
  int best_bracket = -1;
  std::optional<AshaBracket::Promotion> best;
  for (std::size_t b = 0; b < brackets_.size(); ++b) {
    auto promotion = brackets_[b].best_promotion();
    if (!promotion) continue;
    const auto length = brackets_[b].rungs()[static_cast<std::size_t>(promotion->from_rung)].length;
    if (!best || length > brackets_[static_cast<std::size_t>(best_bracket)]
                              .rungs()[static_cast<std::size_t>(best->from_rung)]
                              .length) {
      best = promotion;
      best_bracket = static_cast<int>(b);
    }
  }
  if (best) return issue(ticket, brackets_[static_cast<std::size_t>(best_bracket)].resume(*best));
  // ... else a new trial ...
  if (created_ < max_trials_) return issue(ticket, start_new_trial(created_++));
  // ... else wait while a running trial may still make a promotion possible, else nothing.
  if (int running = active(); running > 0) {
    work.kind = Work::Kind::wait;
    work.reason = fmt::format("no paused trial can be promoted yet; {} trial{} still running", running,
                              running == 1 ? " is" : "s are");
    return work;
  }
  work.reason = fmt::format("all {} trials were created and no paused trial can be promoted", max_trials_);
  return work;
}

Work AshaMethod::start_new_trial(int trial) {
  const int bracket = bracket_of_[static_cast<std::size_t>(trial)];
  auto& target = brackets_[static_cast<std::size_t>(bracket)];
  TrialInfo info{bracket, sampler_->sample(trial)};
  target.start_trial(trial);
  Work work;
  work.kind = Work::Kind::train;
  work.trial = trial;
  work.target_length = target.rungs().front().length;
  work.reason = fmt::format("new trial {} ({} of {}){}: train to rung 0 (length {})", trial, trial + 1, max_trials_,
                            brackets_.size() > 1 ? fmt::format(" in bracket {} of {} rungs", bracket, target.rungs().size())
                                                 : std::string(),
                            work.target_length);
  trials_.emplace(trial, std::move(info));
  return work;
}

Work AshaMethod::issue(int ticket, Work work) {
  tickets_.emplace(ticket, work);  // stored without hyperparameters: they live in trials_
  work.hparams = trials_.at(work.trial).hparams;
  return work;
}

const AshaMethod::TrialInfo& AshaMethod::info_of(int trial, const char* event) const {
  auto found = trials_.find(trial);
  if (found == trials_.end()) throw Error(fmt::format("searcher: {} for trial {}, which no ticket was given", event, trial));
  return found->second;
}

int AshaMethod::active() const {
  int running = 0;
  for (const auto& bracket : brackets_) running += bracket.active();
  return running;
}

Decision AshaMethod::on_validation(int trial, std::int64_t length, double metric) {
  const auto& info = info_of(trial, "validation");
  sampler_->observe(trial, length, metric);  // every result, so a model-based sampler learns (BOHB)
  return brackets_[static_cast<std::size_t>(info.bracket)].on_validation(trial, length, metric);
}

void AshaMethod::on_trial_exited(int trial, ExitKind how) {
  brackets_[static_cast<std::size_t>(info_of(trial, "exit").bracket)].on_trial_exited(trial, how);
}

nlohmann::json AshaMethod::snapshot() const {
  nlohmann::json trials = nlohmann::json::array();
  for (const auto& [id, info] : trials_) trials.push_back({id, info.bracket, hparams_to_json(info.hparams)});
  nlohmann::json tickets = nlohmann::json::array();
  for (const auto& [ticket, work] : tickets_) tickets.push_back({ticket, to_json(work)});
  nlohmann::json brackets = nlohmann::json::array();
  for (const auto& bracket : brackets_) brackets.push_back(bracket.snapshot());
  return {{"created", created_},
          {"trials", trials},
          {"tickets", tickets},
          {"brackets", brackets},
          {"sampler", sampler_->snapshot()}};
}

void AshaMethod::restore(const nlohmann::json& state) {
  // Indexes into bracket_of_ and brackets_: checked, not trusted.
  created_ = json_as_int(state.at("created"), "ASHA snapshot");
  if (created_ < 0 || created_ > max_trials_) {
    throw Error(fmt::format("searcher: ASHA snapshot: {} trials created, of {}", created_, max_trials_));
  }
  trials_.clear();
  for (const auto& row : state.at("trials")) {
    const int bracket = json_as_int(row.at(1), "ASHA snapshot");
    if (bracket < 0 || static_cast<std::size_t>(bracket) >= brackets_.size()) {
      throw Error(fmt::format("searcher: ASHA snapshot: bracket {} of {}", bracket, brackets_.size()));
    }
    trials_[json_as_int(row.at(0), "ASHA snapshot")] = TrialInfo{bracket, hparams_from_json(row.at(2))};
  }
  tickets_.clear();
  for (const auto& row : state.at("tickets")) tickets_[json_as_int(row.at(0), "ASHA snapshot")] = work_from_json(row.at(1));
  const auto& brackets = state.at("brackets");
  if (brackets.size() != brackets_.size()) {
    throw Error(fmt::format("searcher: ASHA snapshot has {} brackets, the experiment {}", brackets.size(), brackets_.size()));
  }
  for (std::size_t b = 0; b < brackets_.size(); ++b) brackets_[b].restore(brackets[b]);
  sampler_->restore(state.at("sampler"));
}

}  // namespace dlx::searcher::detail
