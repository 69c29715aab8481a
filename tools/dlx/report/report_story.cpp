// SPDX-License-Identifier: Apache-2.0
#include "report_story.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "report_importance.hpp"

namespace dlx::cli::report {

double round_for_page(double value) {
  if (!std::isfinite(value)) return value;
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return std::strtod(text, nullptr);
}

nlohmann::json number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return round_for_page(value);
}

std::vector<Pause> searcher_pauses(const searcher::SearchState* search, int trial) {
  std::vector<Pause> pauses;
  if (!search) return pauses;
  for (const auto& decision : search->decisions()) {
    if (decision.trial != trial) continue;
    if (decision.type == "validation" && decision.action == "pause") {
      pauses.push_back({decision.length, decision.unix_seconds, std::nullopt});
    } else if (decision.type == "work" && decision.action == "train" && !pauses.empty() &&
               !pauses.back().resumed_unix) {
      pauses.back().resumed_unix = decision.unix_seconds;
    }
  }
  return pauses;
}

nlohmann::json attempts(const record::TrialRecord& record, const std::vector<Pause>& pauses) {
  // Runs between restarts: the first from the record's creation, each next one from its restart
  // event; a run ends `downtime` before the next one starts, the last one at the last update.
  struct Run {
    double start, end;
    std::string how, reason, nodes;
    const record::RestartEvent* resumed_by = nullptr;
  };
  std::vector<Run> runs;
  double start = static_cast<double>(record.created_unix);
  const record::RestartEvent* resumed_by = nullptr;
  for (const auto& event : record.restart_events) {
    const double next = static_cast<double>(event.unix_time);
    runs.push_back({start, std::max(start, next - event.downtime_seconds), event.cause, event.reason,
                    event.previous_nodes, resumed_by});
    start = next;
    resumed_by = &event;
  }
  runs.push_back({start, std::max(start, static_cast<double>(record.updated_unix)), record.state,
                  record.stop_reason, record.nodes, resumed_by});

  nlohmann::json out = nlohmann::json::array();
  for (std::size_t r = 0; r < runs.size(); ++r) {
    auto run = runs[r];
    const auto emit = [&](double from, double to, const std::string& how, const std::string& reason, bool first_piece) {
      nlohmann::json attempt{{"start", from}, {"end", to}, {"how", how}, {"reason", reason}};
      if (!run.nodes.empty()) attempt["nodes"] = run.nodes;
      if (first_piece && run.resumed_by) {
        attempt["resumed_step"] = run.resumed_by->resumed_step;
        attempt["steps_lost"] = run.resumed_by->steps_lost;
        attempt["seconds_lost"] = round_for_page(run.resumed_by->seconds_lost);
        attempt["downtime"] = round_for_page(run.resumed_by->downtime_seconds);
      }
      out.push_back(std::move(attempt));
    };
    // The searcher's pauses inside this run split it (a promoted ASHA trial waited meanwhile).
    double from = run.start;
    bool first_piece = true;
    for (const auto& pause : pauses) {
      const auto paused = static_cast<double>(pause.paused_unix);
      if (!pause.resumed_unix || paused < from || paused > run.end) continue;
      const auto resumed = static_cast<double>(*pause.resumed_unix);
      if (resumed > run.end) continue;
      emit(from, paused, "paused", fmt::format("paused by the searcher at {}", pause.length), first_piece);
      first_piece = false;
      from = resumed;
    }
    emit(from, run.end, run.how, run.reason, first_piece);
  }
  return out;
}

nlohmann::json asha_story(const config::Experiment& experiment, const searcher::SearchState* search) {
  const auto name = experiment.searcher.name;
  if (!search || (name != config::SearcherName::async_halving && name != config::SearcherName::adaptive_asha)) {
    return nullptr;
  }
  nlohmann::json results = nlohmann::json::array();
  struct Rung {
    std::int64_t length = 0;
    int results = 0, stopped = 0;
    std::map<int, bool> trials;
  };
  std::map<int, Rung> rungs;
  std::map<int, int> highest_rung;  // trial -> the highest rung it reported at
  for (const auto& decision : search->decisions()) {
    if (decision.type != "validation" || !decision.ranking || !decision.metric) continue;
    const auto& ranking = *decision.ranking;
    results.push_back({{"trial", decision.trial}, {"rung", ranking.rung}, {"length", decision.length},
                       {"metric", number(*decision.metric)}, {"rank", ranking.rank}, {"peers", ranking.peers},
                       {"keep", ranking.keep}, {"action", decision.action}});
    auto& rung = rungs[ranking.rung];
    rung.length = std::max(rung.length, decision.length);
    if (!rung.trials.contains(decision.trial)) ++rung.results;
    rung.trials[decision.trial] = true;
    if (decision.action == "stop") ++rung.stopped;
    highest_rung[decision.trial] = std::max(highest_rung[decision.trial], ranking.rung);
  }
  if (results.empty()) return nullptr;
  nlohmann::json rung_rows = nlohmann::json::array();
  for (const auto& [index, rung] : rungs) {
    int went_on = 0;
    for (const auto& [trial, unused] : rung.trials) went_on += highest_rung[trial] > index ? 1 : 0;
    rung_rows.push_back({{"rung", index}, {"length", rung.length}, {"results", rung.results},
                         {"went_on", went_on}, {"stopped", rung.stopped}});
  }
  return {{"rungs", rung_rows}, {"results", results}};
}

nlohmann::json pbt_story(const config::Experiment& experiment, const searcher::SearchState* search,
                         const std::vector<const record::TrialRecord*>& records) {
  if (experiment.searcher.name != config::SearcherName::pbt) return nullptr;
  const int population = std::max(1, experiment.searcher.pbt.population_size);
  std::map<int, std::string> reasons;  // trial -> the reason of its work order
  // Where each trial sits in the lineage drawing. With Determined's numbering a trial id says
  // neither its round nor its member (a member that goes on keeps its trial; a replacement gets
  // the next free id), so both come from the tickets of its work orders: ticket = round x
  // population + member, and a trial spans the rounds from its first ticket to its last.
  struct Placement {
    int member = 0, first_round = 0, last_round = 0;
  };
  std::map<int, Placement> placements;
  if (search) {
    for (const auto& decision : search->decisions()) {
      if (decision.type != "work" || decision.action != "train") continue;
      if (!reasons.contains(decision.trial)) reasons[decision.trial] = decision.reason;  // its first order's
      if (!decision.ticket || *decision.ticket < 0) continue;
      const int round = *decision.ticket / population, member = *decision.ticket % population;
      auto [found, added] = placements.try_emplace(decision.trial, Placement{member, round, round});
      if (!added) {
        found->second.first_round = std::min(found->second.first_round, round);
        found->second.last_round = std::max(found->second.last_round, round);
      }
    }
  }
  nlohmann::json placed = nlohmann::json::array();
  for (const auto& [trial, at] : placements) {
    placed.push_back({{"trial", trial}, {"member", at.member}, {"first_round", at.first_round},
                      {"last_round", at.last_round}});
  }
  nlohmann::json links = nlohmann::json::array();
  for (const auto* record : records) {
    if (!record || !record->started_from) continue;
    const auto id = static_cast<int>(record->trial_id);
    const auto parent = record->started_from->trial_id;
    const auto reason = reasons.contains(id) ? reasons[id] : std::string();
    // A member that goes on into the next round keeps its trial (Determined's numbering): only a
    // replacement, a new trial copied from a better member, starts from another trial.
    const bool exploit = parent != id;
    links.push_back({{"trial", id}, {"parent", parent}, {"step", record->started_from->step},
                     {"exploit", exploit}, {"reason", reason}});
  }
  return {{"population", population},
          {"rounds", experiment.searcher.pbt.num_rounds},
          {"links", links},
          {"placements", placed}};
}

ComparedResults compared_results(const config::Experiment& experiment, const searcher::SearchState* search,
                                 const std::vector<std::pair<int, std::optional<double>>>& best_of_trial) {
  ComparedResults compared;
  const auto name = experiment.searcher.name;
  const bool asha = name == config::SearcherName::async_halving || name == config::SearcherName::adaptive_asha;
  if (asha && search) {
    std::map<std::int64_t, std::map<int, double>> by_length;  // length -> trial -> metric
    for (const auto& decision : search->decisions()) {
      if (decision.type == "validation" && decision.ranking && decision.metric && !std::isnan(*decision.metric)) {
        by_length[decision.length][decision.trial] = *decision.metric;
      }
    }
    for (auto it = by_length.rbegin(); it != by_length.rend(); ++it) {
      if (it->second.size() < kMinTrials) continue;
      compared.basis = fmt::format("each trial's {} at length {}, the longest rung length with at least {} "
                                   "results (ASHA trials compared at the same rung)",
                                   experiment.searcher.metric, it->first, kMinTrials);
      compared.results.assign(it->second.begin(), it->second.end());
      return compared;
    }
    compared.basis = fmt::format("no rung has {} results yet (ASHA trials are compared at the same rung)",
                                 kMinTrials);
    return compared;
  }
  compared.basis = fmt::format("each trial's best validation {}", experiment.searcher.metric);
  for (const auto& [id, best] : best_of_trial) {
    if (best && !std::isnan(*best)) compared.results.emplace_back(id, *best);
  }
  return compared;
}

}  // namespace dlx::cli::report
