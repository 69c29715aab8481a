// SPDX-License-Identifier: Apache-2.0
// Missing values: -1 for an integer that has none (no ticket, no ranking), NaN for a metric that
// has none, "" for a string (the file's `missing_values` attribute says the same to readers).
#include "summary_tables.hpp"

#include <cmath>
#include <limits>

namespace dlx::summary::detail {

namespace {

constexpr double kNoMetric = std::numeric_limits<double>::quiet_NaN();

using Ints = std::vector<std::int64_t>;
using Reals = std::vector<double>;
using Texts = std::vector<std::string>;

template <typename T>
T& cells(std::vector<TableColumn>& table, std::size_t column) {
  return std::get<T>(table[column].values);
}

// A hyperparameter column takes the narrowest type every trial's value fits: int64 when all are
// integers, float64 when all are numbers, else text (strings as they are, anything else as JSON).
TableColumn hparam_column(const std::string& name, const std::vector<const nlohmann::ordered_json*>& values) {
  bool integers = true, numbers = true;
  for (const auto* value : values) {
    integers = integers && value && value->is_number_integer();
    numbers = numbers && value && value->is_number();
  }
  TableColumn column{"hparams." + name, Texts{}};
  if (integers) {
    Ints out;
    for (const auto* value : values) out.push_back(value->get<std::int64_t>());
    column.values = std::move(out);
  } else if (numbers) {
    Reals out;
    for (const auto* value : values) out.push_back(value->get<double>());
    column.values = std::move(out);
  } else {
    Texts out;
    for (const auto* value : values) {
      out.push_back(!value ? "" : value->is_string() ? value->get<std::string>() : value->dump());
    }
    column.values = std::move(out);
  }
  return column;
}

std::string values_text(const config::Hyperparameter& hp) {
  if (hp.type == config::HyperparameterType::constant) return hp.value.dump();
  if (hp.type == config::HyperparameterType::categorical) return nlohmann::json(hp.vals).dump();
  return "";
}

}  // namespace

std::vector<TableColumn> search_space_table(const config::Experiment& experiment) {
  std::vector<TableColumn> table{{"name", Texts{}},  {"type", Texts{}},  {"minval", Reals{}}, {"maxval", Reals{}},
                                 {"base", Reals{}},  {"count", Ints{}},  {"values", Texts{}}};
  for (const auto& hp : experiment.hyperparameters) {
    const bool ranged = hp.type == config::HyperparameterType::integer ||
                        hp.type == config::HyperparameterType::real || hp.type == config::HyperparameterType::log;
    cells<Texts>(table, 0).push_back(hp.name);
    cells<Texts>(table, 1).push_back(config::to_string(hp.type));
    cells<Reals>(table, 2).push_back(ranged ? hp.minval : kNoMetric);
    cells<Reals>(table, 3).push_back(ranged ? hp.maxval : kNoMetric);
    cells<Reals>(table, 4).push_back(hp.type == config::HyperparameterType::log ? hp.base : kNoMetric);
    cells<Ints>(table, 5).push_back(hp.count.value_or(-1));
    cells<Texts>(table, 6).push_back(values_text(hp));
  }
  return table;
}

std::vector<TableColumn> trial_table(const searcher::SearchState& state) {
  std::vector<TableColumn> table{
      {"trial", Ints{}},        {"status", Texts{}},      {"ticket", Ints{}},      {"tasks", Ints{}},
      {"target_length", Ints{}}, {"last_length", Ints{}}, {"last_metric", Reals{}}, {"best_metric", Reals{}},
      {"best_length", Ints{}},  {"reports", Ints{}},      {"reason", Texts{}},     {"failure", Texts{}},
      {"hparams_json", Texts{}}};
  for (const auto& [id, trial] : state.trials()) {
    cells<Ints>(table, 0).push_back(id);
    cells<Texts>(table, 1).push_back(trial.status);
    cells<Ints>(table, 2).push_back(trial.ticket.value_or(-1));
    cells<Ints>(table, 3).push_back(trial.tasks);
    cells<Ints>(table, 4).push_back(trial.target_length);
    cells<Ints>(table, 5).push_back(trial.last_length);
    cells<Reals>(table, 6).push_back(trial.last_metric.value_or(kNoMetric));
    cells<Reals>(table, 7).push_back(trial.best_metric.value_or(kNoMetric));
    cells<Ints>(table, 8).push_back(trial.best_metric ? trial.best_length : -1);
    cells<Ints>(table, 9).push_back(trial.reports);
    cells<Texts>(table, 10).push_back(trial.reason);
    cells<Texts>(table, 11).push_back(trial.failure);
    cells<Texts>(table, 12).push_back(trial.hparams.dump());
  }
  for (const auto& hp : state.experiment().hyperparameters) {
    std::vector<const nlohmann::ordered_json*> values;
    for (const auto& [id, trial] : state.trials()) {
      const auto found = trial.hparams.is_object() ? trial.hparams.find(hp.name) : trial.hparams.end();
      values.push_back(trial.hparams.is_object() && found != trial.hparams.end() ? &*found : nullptr);
    }
    table.push_back(hparam_column(hp.name, values));
  }
  return table;
}

std::vector<TableColumn> decision_table(const searcher::SearchState& state) {
  std::vector<TableColumn> table{
      {"journal_offset", Ints{}}, {"event", Texts{}},  {"ticket", Ints{}}, {"trial", Ints{}},
      {"length", Ints{}},         {"metric", Reals{}}, {"action", Texts{}}, {"target_length", Ints{}},
      {"rung", Ints{}},           {"rank", Ints{}},    {"peers", Ints{}},  {"keep", Ints{}},
      {"reason", Texts{}},        {"unix_time", Ints{}}};
  for (const auto& entry : state.decisions()) {
    cells<Ints>(table, 0).push_back(static_cast<std::int64_t>(entry.offset));
    cells<Texts>(table, 1).push_back(entry.type);
    cells<Ints>(table, 2).push_back(entry.ticket.value_or(-1));
    cells<Ints>(table, 3).push_back(entry.trial);
    cells<Ints>(table, 4).push_back(entry.length);
    cells<Reals>(table, 5).push_back(entry.metric.value_or(kNoMetric));
    cells<Texts>(table, 6).push_back(entry.action);
    cells<Ints>(table, 7).push_back(entry.target_length);
    cells<Ints>(table, 8).push_back(entry.ranking ? entry.ranking->rung : -1);
    cells<Ints>(table, 9).push_back(entry.ranking ? entry.ranking->rank : -1);
    cells<Ints>(table, 10).push_back(entry.ranking ? entry.ranking->peers : -1);
    cells<Ints>(table, 11).push_back(entry.ranking ? entry.ranking->keep : -1);
    cells<Texts>(table, 12).push_back(entry.reason);
    cells<Ints>(table, 13).push_back(entry.unix_seconds);
  }
  return table;
}

}  // namespace dlx::summary::detail
