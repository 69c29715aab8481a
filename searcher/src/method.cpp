// SPDX-License-Identifier: Apache-2.0
// make_method() and ticket_count(): which method an experiment's searcher section names, and how
// many array tasks it needs; plus the JSON forms of Work and Decision that the journal records.
//
// JSON forms (keys snake_case, kinds as their to_string names; the round trip is exact):
//   Work      {"kind": "train", "trial": 3, "hparams": [["lr", 0.01], ["layers", 2]],
//              "start_length": 27, "checkpoint_trial": 3, "target_length": 81, "reason": "..."}
//             checkpoint_trial is null when training starts from scratch; hparams is a list of
//             [name, value] pairs so that file order survives (hparams_json.hpp), null for wait
//             and none.
//   Decision  {"kind": "continue_training", "target_length": 81, "reason": "..."}
#include "dlx/searcher/method.hpp"

#include <algorithm>
#include <iterator>
#include <utility>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "dlx/config/display_text.hpp"
#include "dlx/searcher/journal.hpp"
#include "dlx/searcher/trial_plan.hpp"
#include "hparams_json.hpp"
#include "json_fields.hpp"
#include "method_factories.hpp"
#include "ordered_members.hpp"

namespace dlx::searcher {

using config::SearcherName;

std::unique_ptr<Method> make_method(const config::Experiment& experiment) {
  switch (experiment.searcher.name) {
    case SearcherName::single:
    case SearcherName::grid:
    case SearcherName::random:
      return detail::make_fixed_trials_method(experiment);
    case SearcherName::async_halving:
      return detail::make_asha_method(experiment);
    case SearcherName::adaptive_asha:
      return detail::make_adaptive_asha_method(experiment);
    case SearcherName::pbt:
      return detail::make_pbt_method(experiment);
  }
  throw Error(fmt::format("searcher: unknown method {}", static_cast<int>(experiment.searcher.name)));
}

int ticket_count(const config::Experiment& experiment) {
  switch (experiment.searcher.name) {
    case SearcherName::async_halving:
    case SearcherName::adaptive_asha:
      return trial_count(experiment) + detail::asha_promotion_tickets(experiment);
    case SearcherName::pbt:  // one ticket per member and round (trial_count checked the product)
      return trial_count(experiment) > 0 ? experiment.searcher.pbt.population_size * experiment.searcher.pbt.num_rounds
                                         : 0;
    default:
      return trial_count(experiment);
  }
}

const char* to_string(Work::Kind kind) {
  switch (kind) {
    case Work::Kind::train: return "train";
    case Work::Kind::wait: return "wait";
    case Work::Kind::none: return "none";
  }
  return "?";
}

const char* to_string(Decision::Kind kind) {
  switch (kind) {
    case Decision::Kind::continue_training: return "continue_training";
    case Decision::Kind::stop: return "stop";
    case Decision::Kind::pause: return "pause";
    case Decision::Kind::complete: return "complete";
  }
  return "?";
}

const char* to_string(ExitKind kind) {
  switch (kind) {
    case ExitKind::completed: return "completed";
    case ExitKind::stopped: return "stopped";
    case ExitKind::paused: return "paused";
    case ExitKind::failed: return "failed";
  }
  return "?";
}

namespace {

// The enumerator of `Kind` whose to_string is `name`; `values` lists every enumerator.
template <typename Kind, std::size_t N>
Kind kind_from_string(const std::string& name, const Kind (&values)[N], const char* what) {
  auto found = std::find_if(std::begin(values), std::end(values),
                            [&](Kind kind) { return name == to_string(kind); });
  if (found == std::end(values)) {
    throw JournalError(fmt::format("unknown {} kind \"{}\"", what, config::abbreviated(name, 32)));
  }
  return *found;
}

// A ranking is written only when there is one, so events without one keep their earlier form.
void put_ranking(nlohmann::json& json, const std::optional<Ranking>& ranking) {
  if (!ranking) return;
  json["ranking"] = {{"rung", ranking->rung}, {"rank", ranking->rank}, {"peers", ranking->peers},
                     {"keep", ranking->keep}};
}

std::optional<Ranking> ranking_from(const nlohmann::json& json, const char* what) {
  if (!json.contains("ranking") || json.at("ranking").is_null()) return std::nullopt;
  const auto& r = json.at("ranking");
  return Ranking{detail::json_int(r, "rung", what), detail::json_int(r, "rank", what),
                 detail::json_int(r, "peers", what), detail::json_int(r, "keep", what)};
}

}  // namespace

nlohmann::json to_json(const Work& work) {
  nlohmann::json json = {{"kind", to_string(work.kind)},
          {"trial", work.trial},
          {"hparams", detail::hparams_to_json(work.hparams)},
          {"start_length", work.start_length},
          {"checkpoint_trial", work.checkpoint_trial ? nlohmann::json(*work.checkpoint_trial) : nlohmann::json()},
          {"target_length", work.target_length},
          {"reason", work.reason}};
  put_ranking(json, work.ranking);
  return json;
}

Work work_from_json(const nlohmann::json& json) {
  static constexpr Work::Kind kKinds[] = {Work::Kind::train, Work::Kind::wait, Work::Kind::none};
  Work work;
  work.kind = kind_from_string(detail::json_string(json, "kind", "work"), kKinds, "work");
  work.trial = detail::json_int(json, "trial", "work");
  work.hparams = detail::hparams_from_json(detail::json_member(json, "hparams", "work"));
  work.start_length = detail::json_int64(json, "start_length", "work");
  if (json.contains("checkpoint_trial") && !json.at("checkpoint_trial").is_null()) {
    work.checkpoint_trial = detail::json_int(json, "checkpoint_trial", "work");
  }
  work.target_length = detail::json_int64(json, "target_length", "work");
  work.reason = detail::json_string(json, "reason", "work");
  work.ranking = ranking_from(json, "work");
  return work;
}

nlohmann::json to_json(const Decision& decision) {
  nlohmann::json json = {{"kind", to_string(decision.kind)},
                         {"target_length", decision.target_length},
                         {"reason", decision.reason}};
  put_ranking(json, decision.ranking);
  return json;
}

Decision decision_from_json(const nlohmann::json& json) {
  static constexpr Decision::Kind kKinds[] = {Decision::Kind::continue_training, Decision::Kind::stop,
                                              Decision::Kind::pause, Decision::Kind::complete};
  Decision decision;
  decision.kind = kind_from_string(detail::json_string(json, "kind", "decision"), kKinds, "decision");
  decision.target_length = detail::json_int64(json, "target_length", "decision");
  decision.reason = detail::json_string(json, "reason", "decision");
  decision.ranking = ranking_from(json, "decision");
  return decision;
}

namespace detail {

nlohmann::json hparams_to_json(const nlohmann::ordered_json& hparams) {
  if (hparams.is_null()) return nullptr;  // wait and none carry no hyperparameters
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto& [name, value] : hparams.items()) pairs.push_back({name, nlohmann::json(value)});
  return pairs;
}

nlohmann::ordered_json hparams_from_json(const nlohmann::json& json) {
  if (json.is_null()) return nullptr;
  if (!json.is_array()) {
    throw JournalError(fmt::format("hparams: expected a list of [name, value] pairs, found {}", json_kind(json)));
  }
  // What hparams[name] = value does, linear in the pairs: a crafted list of 100,000 pairs was
  // quadratic.
  OrderedMembers hparams(json.size());
  for (const auto& pair : json) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string()) {
      throw JournalError(fmt::format("hparams: expected [name, value], found {}",
                                     config::abbreviated(pair.dump(), 64)));
    }
    hparams.set(pair[0].get_ref<const std::string&>(), nlohmann::ordered_json(pair[1]));
  }
  return std::move(hparams).take();
}

}  // namespace detail

}  // namespace dlx::searcher
