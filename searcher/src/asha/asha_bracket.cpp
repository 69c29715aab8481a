// SPDX-License-Identifier: Apache-2.0
#include "asha_bracket.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "json_fields.hpp"

namespace dlx::searcher::detail {

namespace {

constexpr std::array<const char*, 5> kPhaseNames{"training", "paused", "stopped", "completed", "failed"};

const char* phase_name(AshaBracket::Phase phase) { return kPhaseNames[static_cast<std::size_t>(phase)]; }

AshaBracket::Phase phase_from_name(const std::string& name) {
  auto found = std::find(kPhaseNames.begin(), kPhaseNames.end(), name);
  if (found == kPhaseNames.end()) throw Error(fmt::format("searcher: ASHA snapshot: unknown phase \"{}\"", name));
  return static_cast<AshaBracket::Phase>(found - kPhaseNames.begin());
}

std::string metric_text(double metric) { return fmt::format("{:.6g}", metric); }

// JSON has no NaN or infinities: NaN (a failure, or a NaN metric: both rank last) is null and
// the infinities are strings, so that restore() rebuilds exactly the same rankings.
nlohmann::json encode_metric(double metric) {
  if (std::isnan(metric)) return nullptr;
  if (std::isinf(metric)) return metric > 0 ? "inf" : "-inf";
  return metric;
}

double decode_metric(const nlohmann::json& json) {
  if (json.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (json.is_string()) {
    return json.get<std::string>() == "-inf" ? -std::numeric_limits<double>::infinity()
                                             : std::numeric_limits<double>::infinity();
  }
  return json.get<double>();
}

}  // namespace

AshaBracket::AshaBracket(AshaSettings settings)
    : settings_(std::move(settings)),
      tables_(settings_.rungs.size()),
      training_toward_(settings_.rungs.size(), 0) {}

RungTable::Entry AshaBracket::entry(int trial, const TrialState& state, int rung) const {
  return {oriented_key(state.results[static_cast<std::size_t>(rung)], settings_.smaller_is_better), trial};
}

AshaBracket::TrialState& AshaBracket::state_of(int trial, const char* event) {
  auto found = trials_.find(trial);
  if (found == trials_.end()) throw Error(fmt::format("searcher: {} for trial {}, which was never started", event, trial));
  return found->second;
}

void AshaBracket::start_trial(int trial) {
  if (trials_.contains(trial)) throw Error(fmt::format("searcher: trial {} was started twice", trial));
  trials_[trial] = TrialState{};
  ++training_toward_[0];
  ++started_;
  ++active_;
}

// A rung is closed when it can receive no more results: every new trial was started, none is
// training toward it, and the rung below is closed and will promote nobody else.
std::vector<bool> AshaBracket::closed_rungs() const {
  const std::size_t count = settings_.rungs.size();
  std::vector<bool> closed(count, false);
  bool nothing_more_from_below = started_ == settings_.trials;
  for (std::size_t k = 0; k < count; ++k) {
    closed[k] = nothing_more_from_below && training_toward_[k] == 0;
    if (k + 1 == count) break;
    nothing_more_from_below = closed[k] && !promotable(static_cast<int>(k), closed[k]);
  }
  return closed;
}

int AshaBracket::quota(int rung, bool closed) const {
  const int results = tables_[static_cast<std::size_t>(rung)].size();
  const int quota = asha_keep(results, settings_.divisor);
  if ((settings_.stop_once || closed) && results > 0) return std::max(quota, 1);
  return quota;
}

bool AshaBracket::promotable(int rung, bool closed) const {
  const auto& table = tables_[static_cast<std::size_t>(rung)];
  const auto* best = table.best_waiting();
  return best != nullptr && table.rank(*best) < quota(rung, closed);
}

std::string AshaBracket::ranking(int trial, const TrialState& state, int rung, bool closed) const {
  const auto& table = tables_[static_cast<std::size_t>(rung)];
  const int keep = quota(rung, closed);
  return fmt::format("rung {} (length {}): {} {} ranks {} of {}; top {}{} {}", rung,
                     settings_.rungs[static_cast<std::size_t>(rung)].length, settings_.metric,
                     metric_text(state.results[static_cast<std::size_t>(rung)]), table.rank(entry(trial, state, rung)) + 1,
                     table.size(), keep, closed && keep > asha_keep(table.size(), settings_.divisor) ? " (rung closed)" : "",
                     settings_.stop_once ? "continue" : "promoted");
}

Ranking AshaBracket::standing(int trial, const TrialState& state, int rung, bool closed) const {
  const auto& table = tables_[static_cast<std::size_t>(rung)];
  return {rung, table.rank(entry(trial, state, rung)) + 1, table.size(), quota(rung, closed)};
}

std::optional<AshaBracket::Promotion> AshaBracket::best_promotion() const {
  if (settings_.stop_once || settings_.rungs.size() < 2) return std::nullopt;
  const auto closed = closed_rungs();
  for (int k = static_cast<int>(settings_.rungs.size()) - 2; k >= 0; --k) {
    if (promotable(k, closed[static_cast<std::size_t>(k)])) {
      return Promotion{tables_[static_cast<std::size_t>(k)].best_waiting()->trial, k};
    }
  }
  return std::nullopt;
}

Work AshaBracket::resume(const Promotion& promotion) {
  auto& state = state_of(promotion.trial, "promotion");
  const int rung = promotion.from_rung;
  if (state.phase != Phase::paused || state.rung != rung) {
    throw Error(fmt::format("searcher: trial {} cannot be promoted from rung {}: it is {} at rung {}", promotion.trial,
                            rung, phase_name(state.phase), state.rung));
  }
  const auto from = static_cast<std::size_t>(rung);
  Work work;
  work.kind = Work::Kind::train;
  work.trial = promotion.trial;
  work.start_length = settings_.rungs[from].length;
  work.checkpoint_trial = promotion.trial;
  work.target_length = settings_.rungs[from + 1].length;
  work.reason = fmt::format("resume trial {}: {}; train from length {} to {}", promotion.trial,
                            ranking(promotion.trial, state, rung, closed_rungs()[from]), work.start_length,
                            work.target_length);
  work.ranking = standing(promotion.trial, state, rung, closed_rungs()[from]);
  tables_[from].remove_waiting(entry(promotion.trial, state, rung));
  state.phase = Phase::training;
  state.rung = rung + 1;
  ++training_toward_[from + 1];
  ++active_;
  return work;
}

Decision AshaBracket::on_validation(int trial, std::int64_t length, double metric) {
  auto& state = state_of(trial, "validation");
  if (state.phase != Phase::training) {
    throw Error(fmt::format("searcher: trial {} reported a validation while {}, not training", trial,
                            phase_name(state.phase)));
  }
  const int rung = state.rung;
  const auto at = static_cast<std::size_t>(rung);
  const std::int64_t rung_length = settings_.rungs[at].length;
  Decision decision;
  if (length < rung_length) {  // an early validation of the trainer's own: not a rung result
    decision.kind = Decision::Kind::continue_training;
    decision.target_length = rung_length;
    decision.reason = fmt::format("length {} is short of rung {} (length {}); continue", length, rung, rung_length);
    return decision;
  }
  state.results.push_back(metric);
  const int rank = tables_[at].insert(entry(trial, state, rung));
  --training_toward_[at];

  --active_;  // back below if it goes on
  if (at + 1 == settings_.rungs.size()) {
    state.phase = Phase::completed;
    decision.kind = Decision::Kind::complete;
    decision.reason = fmt::format("rung {} (length {}, the top): {} {} ranks {} of {}; complete", rung, rung_length,
                                  settings_.metric, metric_text(metric), rank + 1, tables_[at].size());
    decision.ranking = Ranking{rung, rank + 1, tables_[at].size(), tables_[at].size()};
    return decision;
  }
  const bool closed = !settings_.stop_once && closed_rungs()[at];
  const std::string ranked = ranking(trial, state, rung, closed);
  decision.ranking = standing(trial, state, rung, closed);
  if (rank < quota(rung, closed)) {  // in the top: go on in place, no checkpoint round trip
    state.rung = rung + 1;
    ++training_toward_[at + 1];
    ++active_;
    decision.kind = Decision::Kind::continue_training;
    decision.target_length = settings_.rungs[at + 1].length;
    decision.reason = fmt::format("{}; go on to length {}", ranked, decision.target_length);
  } else if (settings_.stop_once) {
    state.phase = Phase::stopped;
    decision.kind = Decision::Kind::stop;
    decision.reason = ranked + "; stop";
  } else {
    // The trainer made its checkpoint at the rung length durable before it reported, so a later
    // ticket may resume the trial from now on.
    state.phase = Phase::paused;
    tables_[at].add_waiting(entry(trial, state, rung));
    decision.kind = Decision::Kind::pause;
    decision.reason = fmt::format("{}; pause at length {} until promoted", ranked, rung_length);
  }
  return decision;
}

void AshaBracket::on_trial_exited(int trial, ExitKind how) {
  auto& state = state_of(trial, "exit");
  const auto at = static_cast<std::size_t>(state.rung);
  switch (state.phase) {
    case Phase::training:
      // Gone before its result at the rung it was heading for: it counts there as the worst
      // result (as in Determined), so that the rung's quota still grows, and is never promoted.
      --training_toward_[at];
      --active_;
      state.results.push_back(std::numeric_limits<double>::quiet_NaN());
      tables_[at].insert(entry(trial, state, state.rung));
      state.phase = Phase::failed;
      break;
    case Phase::paused:
      // Decisions end trials by themselves; an exit after one only matters when it failed (its
      // checkpoint may be unusable): such a trial is never promoted.
      if (how == ExitKind::failed) {
        tables_[at].remove_waiting(entry(trial, state, state.rung));
        state.phase = Phase::failed;
      }
      break;
    case Phase::stopped:
    case Phase::completed:
      if (how == ExitKind::failed) state.phase = Phase::failed;
      break;
    case Phase::failed:  // a repeated exit changes nothing
      break;
  }
}

nlohmann::json AshaBracket::snapshot() const {
  nlohmann::json trials = nlohmann::json::array();
  for (const auto& [id, state] : trials_) {
    nlohmann::json results = nlohmann::json::array();
    for (double metric : state.results) results.push_back(encode_metric(metric));
    trials.push_back({id, phase_name(state.phase), state.rung, results});
  }
  return {{"started", started_}, {"trials", trials}};
}

void AshaBracket::restore(const nlohmann::json& state) {
  trials_.clear();
  started_ = json_as_int(state.at("started"), "ASHA bracket snapshot");
  for (const auto& row : state.at("trials")) {
    TrialState trial;
    trial.phase = phase_from_name(row.at(1).get<std::string>());
    trial.rung = json_as_int(row.at(2), "ASHA bracket snapshot");
    for (const auto& metric : row.at(3)) trial.results.push_back(decode_metric(metric));
    // The rung tables are indexed by both, so a snapshot is checked, not trusted: a trial at rung r
    // has a result for every rung below r, and for r too unless it is still training toward it.
    const auto rungs = settings_.rungs.size();
    const auto expected = static_cast<std::size_t>(trial.rung) + (trial.phase == Phase::training ? 0 : 1);
    if (trial.rung < 0 || static_cast<std::size_t>(trial.rung) >= rungs || trial.results.size() != expected) {
      throw Error(fmt::format("searcher: ASHA snapshot: a {} trial at rung {} with {} results, in a bracket of {} rungs",
                              phase_name(trial.phase), trial.rung, trial.results.size(), rungs));
    }
    trials_[json_as_int(row.at(0), "ASHA bracket snapshot")] = std::move(trial);
  }
  rebuild_indexes();
}

void AshaBracket::rebuild_indexes() {
  const std::size_t count = settings_.rungs.size();
  tables_.assign(count, RungTable{});
  training_toward_.assign(count, 0);
  active_ = 0;
  for (const auto& [id, state] : trials_) {
    for (std::size_t k = 0; k < state.results.size(); ++k) tables_[k].insert(entry(id, state, static_cast<int>(k)));
    const auto at = static_cast<std::size_t>(state.rung);
    if (state.phase == Phase::training) {
      ++training_toward_[at];
      ++active_;
    }
    if (state.phase == Phase::paused) tables_[at].add_waiting(entry(id, state, state.rung));
  }
}

}  // namespace dlx::searcher::detail
