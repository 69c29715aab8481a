// SPDX-License-Identifier: Apache-2.0
// The HParams dashboard's summaries. TensorBoard finds them by tag, checks the plugin name, and
// parses the content as HParamsPluginData; the values themselves are empty.
#include <map>
#include <set>

#include "dlx/export/tensorboard_events.hpp"
#include "dlx/tensorboard/event.pb.h"
#include "dlx/tensorboard/hparams.pb.h"

namespace dlx::tensorboard {
namespace {

std::string hparams_event(const std::string& tag, const HParamsPluginData& data, double wall_time) {
  Event event;
  event.set_wall_time(wall_time);
  auto* value = event.mutable_summary()->add_value();
  value->set_tag(tag);
  auto* plugin = value->mutable_metadata()->mutable_plugin_data();
  plugin->set_plugin_name("hparams");
  plugin->set_content(data.SerializeAsString());
  return event.SerializeAsString();
}

DataType type_of(const nlohmann::ordered_json& value) {
  if (value.is_boolean()) return DATA_TYPE_BOOL;
  if (value.is_number()) return DATA_TYPE_FLOAT64;
  return DATA_TYPE_STRING;
}

google::protobuf::Value value_of(const nlohmann::ordered_json& value) {
  google::protobuf::Value out;
  if (value.is_boolean()) out.set_bool_value(value.get<bool>());
  else if (value.is_number()) out.set_number_value(value.get<double>());
  else if (value.is_string()) out.set_string_value(value.get<std::string>());
  else out.set_string_value(value.dump());  // trial.h5 holds scalars only; shown, not lost
  return out;
}

}  // namespace

std::string session_start_event(const record::TrialRecord& trial) {
  HParamsPluginData data;
  auto* start = data.mutable_session_start_info();
  for (const auto& [name, value] : trial.hparams.items()) (*start->mutable_hparams())[name] = value_of(value);
  // Every trial is its own group: dlx never repeats a trial with the same hyperparameters.
  start->set_group_name("trial-" + std::to_string(trial.trial_id));
  start->set_start_time_secs(static_cast<double>(trial.created_unix));
  return hparams_event("_hparams_/session_start_info", data, static_cast<double>(trial.created_unix));
}

std::string session_end_event(const record::TrialRecord& trial) {
  HParamsPluginData data;
  auto* end = data.mutable_session_end_info();
  if (trial.state == "completed") end->set_status(STATUS_SUCCESS);
  else if (trial.state == "failed") end->set_status(STATUS_FAILURE);
  else if (trial.state == "running") end->set_status(STATUS_RUNNING);
  else end->set_status(STATUS_UNKNOWN);
  end->set_end_time_secs(static_cast<double>(trial.updated_unix));
  return hparams_event("_hparams_/session_end_info", data, static_cast<double>(trial.updated_unix));
}

double experiment_start(const std::vector<record::TrialRecord>& trials) {
  std::int64_t first = 0;
  for (const auto& trial : trials)
    if (first == 0 || trial.created_unix < first) first = trial.created_unix;
  return static_cast<double>(first);
}

std::string experiment_event(const std::string& experiment_name, const std::string& searcher_metric,
                             const std::vector<record::TrialRecord>& trials) {
  HParamsPluginData data;
  auto* experiment = data.mutable_experiment();
  experiment->set_name(experiment_name);

  // Hyperparameters in the order the first trial that has each lists them; a name whose trials
  // disagree on the type (a PBT mutation turning an int into a string, say) is left untyped.
  std::vector<std::string> names;
  std::map<std::string, DataType> types;
  std::set<std::string> training, validation;
  for (const auto& trial : trials) {
    for (const auto& [name, value] : trial.hparams.items()) {
      auto [found, inserted] = types.emplace(name, type_of(value));
      if (inserted) names.push_back(name);
      else if (found->second != type_of(value)) found->second = DATA_TYPE_UNSET;
    }
    training.insert(trial.training.names().begin(), trial.training.names().end());
    validation.insert(trial.validation.names().begin(), trial.validation.names().end());
  }
  const double created = experiment_start(trials);
  experiment->set_time_created_secs(created);
  for (const auto& name : names) {
    auto* info = experiment->add_hparam_infos();
    info->set_name(name);
    info->set_type(types[name]);
  }

  auto add_metric = [&](const std::string& group, const std::string& metric, DatasetType dataset) {
    auto* info = experiment->add_metric_infos();
    info->mutable_name()->set_tag(group + "/" + metric);  // group "": the trial's own run
    info->set_dataset_type(dataset);
  };
  add_metric("validation", searcher_metric, DATASET_VALIDATION);
  for (const auto& metric : validation)
    if (metric != searcher_metric) add_metric("validation", metric, DATASET_VALIDATION);
  for (const auto& metric : training) add_metric("training", metric, DATASET_TRAINING);
  return hparams_event("_hparams_/experiment", data, created);
}

}  // namespace dlx::tensorboard
