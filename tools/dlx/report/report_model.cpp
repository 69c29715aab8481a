// SPDX-License-Identifier: Apache-2.0
#include "report_model.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "dlx/searcher/method.hpp"
#include "dlx/searcher/search_state.hpp"
#include "dlx/searcher/trial_plan.hpp"
#include "report_downsample.hpp"
#include "report_importance.hpp"
#include "report_resources.hpp"
#include "report_story.hpp"

namespace dlx::cli::report {
namespace {

using record::MetricTable;
using record::TrialRecord;

nlohmann::json optional_number(const std::optional<double>& value) {
  return value ? number(*value) : nlohmann::json(nullptr);
}

std::size_t curve_count(const StatusSources& sources) {
  std::size_t curves = 0;
  for (const auto& record : sources.records) {
    if (record) curves += record->training.names().size() + record->validation.names().size();
  }
  return curves;
}

// Where the trial was interrupted: after each restart's resumed step, and where the searcher
// paused it.
std::vector<std::int64_t> cuts_of(const TrialRecord& record, const std::vector<Pause>& pauses) {
  std::set<std::int64_t> cuts;
  for (const auto& event : record.restart_events) cuts.insert(event.resumed_step);
  for (const auto& pause : pauses) cuts.insert(pause.length);
  return {cuts.begin(), cuts.end()};
}

void add_curves(nlohmann::json& curves, const MetricTable& table, const char* name,
                const std::vector<std::int64_t>& cuts, std::size_t points) {
  for (const auto& [metric, series] : table.all_series()) {
    auto curve = downsample_min_max(series.steps, series.values, cuts, points);
    nlohmann::json rounded = nlohmann::json::array();
    for (const double value : curve.values) rounded.push_back(std::isnan(value) ? nlohmann::json(nullptr) : nlohmann::json(round_for_page(value)));
    curves.push_back({{"t", name}, {"m", metric}, {"s", std::move(curve.steps)}, {"v", std::move(rounded)},
                      {"n", curve.reported}, {"inf", curve.infinite}});
  }
}

double sum_of(const nlohmann::json& attempts, const char* key) {
  double total = 0;
  for (const auto& attempt : attempts) {
    if (attempt.contains(key)) total += attempt[key].get<double>();
  }
  return total;
}

bool better(double a, double b, bool smaller) { return smaller ? a < b : a > b; }

// The best validation value of the searcher metric so far, against wall time (every report of
// every trial) and against trials finished (each finished trial's best, in the order they
// finished). Only the improvements, plus the last point of each.
nlohmann::json best_so_far(const StatusReport& status, const StatusSources& sources, const nlohmann::json& trials,
                           const std::string& metric, bool smaller) {
  struct Point {
    double x;
    double value;
    int trial;
  };
  std::vector<Point> reports;
  for (std::size_t i = 0; i < sources.records.size(); ++i) {
    const auto& record = sources.records[i];
    if (!record) continue;
    const auto series = record->validation.series(metric);
    for (std::size_t r = 0; r < series.values.size(); ++r) {
      const double value = series.values[r], time = series.wall_times[r];
      if (std::isfinite(time)) reports.push_back({time, value, status.rows[i].spec.id});
    }
  }
  std::stable_sort(reports.begin(), reports.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
  const auto improvements = [&](const std::vector<Point>& points) {
    nlohmann::json out = nlohmann::json::array();
    std::optional<Point> best;
    for (const auto& point : points) {
      if (!best || better(point.value, best->value, smaller)) {
        best = point;
        out.push_back({point.x, number(point.value), point.trial});
      }
    }
    if (best && !points.empty() && out.back()[0].get<double>() != points.back().x) {
      out.push_back({points.back().x, number(best->value), best->trial});
    }
    return out;
  };

  std::vector<std::pair<double, Point>> finished;  // (end time, best of the trial)
  for (const auto& trial : trials) {
    if (trial["ended_unix"].is_null() || !trial["best"].is_number()) continue;
    finished.push_back({trial["ended_unix"].get<double>(), {0, trial["best"].get<double>(), trial["id"].get<int>()}});
  }
  std::stable_sort(finished.begin(), finished.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Point> by_trials;
  for (std::size_t k = 0; k < finished.size(); ++k) {
    by_trials.push_back({static_cast<double>(k + 1), finished[k].second.value, finished[k].second.trial});
  }
  return {{"by_time", improvements(reports)}, {"by_trials", improvements(by_trials)}};
}

nlohmann::json importance(const config::Experiment& experiment, const StatusReport& status,
                          const searcher::SearchState* search, const nlohmann::json& hparams) {
  std::vector<std::pair<int, std::optional<double>>> best_of_trial;
  for (const auto& row : status.rows) best_of_trial.emplace_back(row.spec.id, row.best);
  const auto compared = compared_results(experiment, search, best_of_trial);
  std::map<int, const TrialRow*> row_of;
  for (const auto& row : status.rows) row_of[row.spec.id] = &row;

  ImportanceInput input;
  for (const auto& hp : hparams) input.names.push_back(hp["name"].get<std::string>());
  for (const auto& [id, result] : compared.results) {
    if (!row_of.contains(id)) continue;
    std::vector<nlohmann::json> values;
    for (const auto& name : input.names) {
      const auto& given = row_of[id]->spec.hparams;
      values.push_back(given.contains(name) ? nlohmann::json(given[name]) : nlohmann::json(nullptr));
    }
    input.values.push_back(std::move(values));
    input.results.push_back(result);
  }
  nlohmann::json scores = nlohmann::json::array();
  for (const auto& score : hyperparameter_importance(input)) {
    scores.push_back({{"name", score.name}, {"score", round_for_page(score.score)}, {"groups", score.groups}});
  }
  return {{"basis", compared.basis},
          {"trials", input.results.size()},
          {"scores", scores},
          {"method", fmt::format(
                         "The share of the variance of the results' ranks that each hyperparameter explains "
                         "alone (epsilon squared, the bias-corrected correlation ratio: a first-order "
                         "functional ANOVA term with the hyperparameter's marginal estimated by grouping "
                         "its values: one group per value for strings, booleans and up to {} distinct "
                         "numbers, else {} groups of equal counts). 0: no more than chance. Interactions "
                         "are not counted, so the scores need not add up to 1. Shown from {} trials with "
                         "a result on.", kMaxBins, kMaxBins, kMinTrials)}};
}

// The hyperparameters the page shows (the constants are not searched).
nlohmann::json searched_hparams(const config::Experiment& experiment) {
  nlohmann::json hparams = nlohmann::json::array();
  for (const auto& hp : experiment.hyperparameters) {
    if (hp.type == config::HyperparameterType::constant) continue;
    hparams.push_back({{"name", hp.name}, {"type", config::to_string(hp.type)}});
  }
  return hparams;
}

nlohmann::json hparam_warnings_json(const TrialRow& row) {
  nlohmann::json warnings = nlohmann::json::array();
  for (const auto& warning : row.hparam_warnings) warnings.push_back(warning.message);
  return warnings;
}

// One trial of the page: its status row, and from its record (when read) its curves, attempts,
// times and origin.
nlohmann::json trial_model(const TrialRow& row, const TrialRecord* record, const searcher::SearchState* search,
                           std::size_t points) {
  nlohmann::json trial{{"id", row.spec.id}, {"state", row.state}, {"searcher", row.searcher},
                       {"problem", row.problem}, {"hparams", row.spec.hparams},
                       {"last", optional_number(row.last)}, {"best", optional_number(row.best)},
                       {"stop_reason", row.stop_reason}, {"status", nullptr}, {"ended_unix", nullptr},
                       {"shown_state", row.shown_state()}, {"detail", row.detail}, {"last_error", row.last_error},
                       {"hparam_warnings", hparam_warnings_json(row)}};
  if (search) {
    if (const auto found = search->trials().find(row.spec.id); found != search->trials().end()) {
      trial["status"] = found->second.status;
    }
  }
  nlohmann::json curves_json = nlohmann::json::array(), attempts_json = nlohmann::json::array();
  if (record) {
    const auto pauses = searcher_pauses(search, row.spec.id);
    const auto cuts = cuts_of(*record, pauses);
    add_curves(curves_json, record->training, "training", cuts, points);
    add_curves(curves_json, record->validation, "validation", cuts, points);
    attempts_json = attempts(*record, pauses);
    double used = 0;
    for (const auto& attempt : attempts_json) used += attempt["end"].get<double>() - attempt["start"].get<double>();
    trial.update({{"restarts", record->restarts}, {"failures", record->failures}, {"nodes", record->nodes},
                  {"slurm_job_id", record->slurm_job_id}, {"world_size", record->world_size},
                  {"created", record->created_unix}, {"updated", record->updated_unix}, {"time_used", used},
                  {"time_lost", round_for_page(sum_of(attempts_json, "seconds_lost") + sum_of(attempts_json, "downtime"))},
                  {"cuts", cuts}});
    const auto searcher_status = trial["status"].is_string() ? trial["status"].get<std::string>() : "";
    if (row.ended() || row.state == "stopped" || searcher_status == "stopped") trial["ended_unix"] = record->updated_unix;
    if (record->started_from) {
      trial["started_from"] = {{"trial", record->started_from->trial_id}, {"step", record->started_from->step}};
    }
  }
  trial["curves"] = std::move(curves_json);
  trial["attempts"] = std::move(attempts_json);
  return trial;
}

// How the trials map to array tasks when a task runs more than one (packing, or the array cap):
// null for one ticket per task.
nlohmann::json array_model(const config::Experiment& experiment) {
  try {
    const int tasks = searcher::array_task_count(experiment);
    const int tickets = searcher::ticket_count(experiment);
    if (tasks >= tickets) return nullptr;
    const int at_once = config::packed_trials(experiment.resources);
    return {{"tasks", tasks},
            {"tickets", tickets},
            {"at_once", at_once},
            {"trials_per_gpu", experiment.resources.trials_per_gpu ? nlohmann::json(*experiment.resources.trials_per_gpu)
                                                                   : nlohmann::json(nullptr)},
            {"load", searcher::task_load_text(experiment)},
            {"cause", searcher::array_tasks_cause(experiment)}};
  } catch (const std::exception&) {
    return nullptr;  // an experiment the searcher cannot plan: the status rows say why
  }
}

// How trials share GPUs through Slurm's shards, or null.
nlohmann::json gpu_sharing_model(const config::Experiment& experiment) {
  auto text = searcher::shard_sharing_text(experiment);
  return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(std::move(text));
}

nlohmann::json meta_model(const config::Experiment& experiment, const StatusReport& status,
                          const ModelOptions& options, bool ended, std::size_t points, nlohmann::json array) {
  nlohmann::json states = nlohmann::json::object();
  for (const auto& [state, count] : status.states) states[state] = count;
  nlohmann::json warnings = nlohmann::json::array();
  for (const auto& warning : status.warnings) warnings.push_back(warning);
  // The trials' hyperparameter name warnings, merged as dlx status shows them.
  for (const auto& line : status.hparam_warnings) warnings.push_back("warning: " + line);
  return {
      {"experiment", experiment.name},
      {"directory", status.directory.string()},
      {"code", status.code},
      {"images", status.containers},
      {"searcher", config::to_string(experiment.searcher.name)},
      {"sampler", config::to_string(experiment.searcher.sampler)},
      {"array", std::move(array)},
      {"gpu_sharing", gpu_sharing_model(experiment)},
      {"metric", experiment.searcher.metric},
      {"smaller_is_better", experiment.searcher.smaller_is_better},
      {"generated_unix", options.now_unix},
      {"watch_seconds", options.watch_seconds ? nlohmann::json(*options.watch_seconds) : nlohmann::json(nullptr)},
      {"ended", ended},
      {"states", states},
      {"warnings", warnings},
      {"points_per_curve", points},
      {"best_trial", status.best_row ? nlohmann::json(status.rows[*status.best_row].spec.id) : nlohmann::json(nullptr)},
      {"min_trials_importance", kMinTrials}};
}

}  // namespace

nlohmann::json report_model(const config::Experiment& experiment, const StatusReport& status,
                            const StatusSources& sources, const ModelOptions& options) {
  const auto* search = sources.search ? &*sources.search : nullptr;
  const std::size_t curves = curve_count(sources);
  const std::size_t points =
      std::clamp(curves ? options.point_budget / curves : options.max_curve_points, options.min_curve_points,
                 options.max_curve_points);
  const nlohmann::json hparams = searched_hparams(experiment);

  nlohmann::json array = array_model(experiment);
  nlohmann::json trials = nlohmann::json::array();
  std::vector<const TrialRecord*> by_id;
  for (std::size_t i = 0; i < status.rows.size(); ++i) {
    const auto* record = i < sources.records.size() && sources.records[i] ? &*sources.records[i] : nullptr;
    trials.push_back(trial_model(status.rows[i], record, search, points));
    trials.back()["resources"] =
        i < sources.system.size() ? trial_resources(sources.system[i], options.max_curve_points / 4,
                                                    experiment.resources.cpus_per_task.value_or(1))
                                  : nlohmann::json();
    if (record) by_id.push_back(record);
    // The array task that ran it (its latest ticket's), where tasks run several tickets.
    trials.back()["task"] = nullptr;
    if (search && !array.is_null()) {
      const auto found = search->trials().find(status.rows[i].spec.id);
      if (found != search->trials().end() && found->second.ticket) {
        trials.back()["task"] = searcher::task_of_ticket(experiment, *found->second.ticket);
      }
    }
  }
  // Ended: every trial completed or failed, or the searcher is done with trials left paused for
  // good (ASHA's promotion variant leaves its losers paused): StatusReport::finished.
  const bool ended = !status.rows.empty() && status.finished;
  // Once the experiment has ended, a trial the searcher left paused is finished too (for the best
  // value against trials finished), at its last update.
  if (ended) {
    for (auto& trial : trials) {
      if (trial["ended_unix"].is_null() && trial.contains("updated")) trial["ended_unix"] = trial["updated"];
    }
  }

  const auto& metric = experiment.searcher.metric;
  const bool smaller = experiment.searcher.smaller_is_better;
  nlohmann::json model{{"meta", meta_model(experiment, status, options, ended, points, std::move(array))},
                       {"hparams", hparams}};
  model["best_so_far"] = best_so_far(status, sources, trials, metric, smaller);
  model["importance"] = importance(experiment, status, search, hparams);
  model["asha"] = asha_story(experiment, search);
  model["pbt"] = pbt_story(experiment, search, by_id);
  model["resources"] = resources_summary(trials, experiment);
  model["trials"] = std::move(trials);
  return model;
}

}  // namespace dlx::cli::report
