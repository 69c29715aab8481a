// SPDX-License-Identifier: Apache-2.0
#include "dlx/config/snapshot.hpp"

#include <cmath>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "dlx/common/durable_file.hpp"
#include "dlx/config/parse.hpp"
#include "parse_sections.hpp"  // takes_sampler

namespace dlx::config {

namespace {

// A real number as the shortest text that reads back as the same double (fmt's `{}`: 0.7, not
// yaml-cpp's 17 digits 0.69999999999999996), always with a '.' or an exponent so that it reads
// back as a real and not an integer (1.0, not 1); YAML's .nan, .inf and -.inf otherwise.
struct Real {
  double value;
};

YAML::Emitter& operator<<(YAML::Emitter& out, Real real) {
  const double value = real.value;
  if (std::isnan(value)) return out << ".nan";
  if (std::isinf(value)) return out << (value > 0 ? ".inf" : "-.inf");
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return out << text;
}

// Any JSON value back as the YAML that parses to it (yaml_to_json): strings quoted, so that "5"
// and "null" stay strings; containers in flow style.
void emit_value(YAML::Emitter& out, const nlohmann::json& value) {
  if (value.is_null()) {
    out << YAML::Null;
  } else if (value.is_array()) {
    out << YAML::Flow << YAML::BeginSeq;
    for (const auto& item : value) emit_value(out, item);
    out << YAML::EndSeq;
  } else if (value.is_object()) {
    out << YAML::Flow << YAML::BeginMap;
    for (const auto& [key, item] : value.items()) {
      out << YAML::Key << key << YAML::Value;  // keys are read back as text whatever they look like
      emit_value(out, item);
    }
    out << YAML::EndMap;
  } else if (value.is_boolean()) {
    out << value.get<bool>();
  } else if (value.is_number_integer()) {
    out << value.get<std::int64_t>();
  } else if (value.is_number()) {
    out << Real{value.get<double>()};
  } else {
    out << YAML::DoubleQuoted << value.get<std::string>();  // quoted: stays a string on reload
  }
}

void emit_hyperparameter(YAML::Emitter& out, const Hyperparameter& hp) {
  out << YAML::BeginMap << YAML::Key << "type" << YAML::Value << to_string(hp.type);
  switch (hp.type) {
    case HyperparameterType::constant:
      out << YAML::Key << "val" << YAML::Value;
      emit_value(out, hp.value);
      break;
    case HyperparameterType::integer:
      out << YAML::Key << "minval" << YAML::Value << static_cast<std::int64_t>(hp.minval);
      out << YAML::Key << "maxval" << YAML::Value << static_cast<std::int64_t>(hp.maxval);
      break;
    case HyperparameterType::real:
    case HyperparameterType::log:
      out << YAML::Key << "minval" << YAML::Value << Real{hp.minval};
      out << YAML::Key << "maxval" << YAML::Value << Real{hp.maxval};
      if (hp.type == HyperparameterType::log) out << YAML::Key << "base" << YAML::Value << Real{hp.base};
      break;
    case HyperparameterType::categorical:
      out << YAML::Key << "vals" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (const auto& value : hp.vals) emit_value(out, value);
      out << YAML::EndSeq;
      break;
  }
  if (hp.count) out << YAML::Key << "count" << YAML::Value << *hp.count;
  out << YAML::EndMap;
}

// Dotted names back into nested groups, keeping file order.
struct Group {
  std::vector<std::pair<std::string, std::unique_ptr<Group>>> children;
  const Hyperparameter* leaf = nullptr;

  Group& child(const std::string& key) {
    for (auto& [name, group] : children) {
      if (name == key) return *group;
    }
    children.emplace_back(key, std::make_unique<Group>());
    return *children.back().second;
  }
};

void emit_group(YAML::Emitter& out, const Group& group) {
  out << YAML::BeginMap;
  for (const auto& [name, child] : group.children) {
    out << YAML::Key << name << YAML::Value;  // read back as text (the emitter quotes "null")
    if (child->leaf) {
      emit_hyperparameter(out, *child->leaf);
    } else {
      emit_group(out, *child);
    }
  }
  out << YAML::EndMap;
}

void emit_length(YAML::Emitter& out, const char* key, const Length& length) {
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << to_string(length.unit)
      << YAML::Value << length.value << YAML::EndMap;
}

void emit_searcher(YAML::Emitter& out, const SearcherConfig& searcher) {
  out << YAML::Key << "searcher" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << to_string(searcher.name);
  out << YAML::Key << "metric" << YAML::Value << searcher.metric;
  out << YAML::Key << "smaller_is_better" << YAML::Value << searcher.smaller_is_better;
  if (searcher.max_trials > 0) out << YAML::Key << "max_trials" << YAML::Value << searcher.max_trials;
  out << YAML::Key << "max_concurrent_trials" << YAML::Value << searcher.max_concurrent_trials;
  if (searcher.max_length) emit_length(out, "max_length", *searcher.max_length);
  if (searcher.name == SearcherName::async_halving || searcher.name == SearcherName::adaptive_asha) {
    out << YAML::Key << "divisor" << YAML::Value << Real{searcher.asha.divisor};
    out << YAML::Key << "max_rungs" << YAML::Value << searcher.asha.max_rungs;
    out << YAML::Key << "mode" << YAML::Value << to_string(searcher.asha.mode);
    if (!searcher.asha.bracket_rungs.empty()) {
      out << YAML::Key << "bracket_rungs" << YAML::Value << YAML::Flow << searcher.asha.bracket_rungs;
    }
    out << YAML::Key << "stop_once" << YAML::Value << searcher.asha.stop_once;
  }
  if (searcher.name == SearcherName::pbt) {
    const auto& pbt = searcher.pbt;
    out << YAML::Key << "population_size" << YAML::Value << pbt.population_size;
    out << YAML::Key << "num_rounds" << YAML::Value << pbt.num_rounds;
    emit_length(out, "length_per_round", pbt.length_per_round);
    out << YAML::Key << "replace_function" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key
        << "truncate_fraction" << YAML::Value << Real{pbt.truncate_fraction} << YAML::EndMap;
    out << YAML::Key << "explore_function" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key
        << "resample_probability" << YAML::Value << Real{pbt.resample_probability} << YAML::Key << "perturb_factor"
        << YAML::Value << Real{pbt.perturb_factor} << YAML::EndMap;
  }
  if (detail::takes_sampler(searcher.name)) {
    out << YAML::Key << "sampler" << YAML::Value << to_string(searcher.sampler);
    if (searcher.sampler == SamplerName::tpe) {
      const auto& tpe = searcher.tpe;
      out << YAML::Key << "tpe" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "startup_trials"
          << YAML::Value << tpe.startup_trials << YAML::Key << "gamma" << YAML::Value << Real{tpe.gamma} << YAML::Key
          << "candidates" << YAML::Value << tpe.candidates << YAML::EndMap;
    }
  }
  out << YAML::EndMap;
}

void emit_resources(YAML::Emitter& out, const Resources& resources) {
  out << YAML::Key << "resources" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "nodes_per_trial" << YAML::Value << resources.nodes_per_trial;
  out << YAML::Key << "tasks_per_node" << YAML::Value << resources.tasks_per_node;
  if (resources.gpus_per_node) out << YAML::Key << "gpus_per_node" << YAML::Value << *resources.gpus_per_node;
  if (resources.cpus_per_task) out << YAML::Key << "cpus_per_task" << YAML::Value << *resources.cpus_per_task;
  if (resources.mem_per_node) out << YAML::Key << "mem_per_node" << YAML::Value << YAML::DoubleQuoted << *resources.mem_per_node;
  if (resources.time_limit) out << YAML::Key << "time_limit" << YAML::Value << YAML::DoubleQuoted << *resources.time_limit;
  if (resources.partition) out << YAML::Key << "partition" << YAML::Value << YAML::DoubleQuoted << *resources.partition;
  if (resources.sample_period_s != 1.0) out << YAML::Key << "sample_period" << YAML::Value << resources.sample_period_s;
  if (resources.max_array_tasks) out << YAML::Key << "max_array_tasks" << YAML::Value << *resources.max_array_tasks;
  if (resources.trials_per_gpu) out << YAML::Key << "trials_per_gpu" << YAML::Value << *resources.trials_per_gpu;
  if (resources.trials_per_task) out << YAML::Key << "trials_per_task" << YAML::Value << *resources.trials_per_task;
  if (resources.shards_per_gpu) out << YAML::Key << "shards_per_gpu" << YAML::Value << *resources.shards_per_gpu;
  if (resources.mps) out << YAML::Key << "mps" << YAML::Value << true;
  out << YAML::EndMap;
}

void emit_checkpoint(YAML::Emitter& out, const CheckpointPolicy& policy) {
  out << YAML::Key << "checkpoint" << YAML::Value << YAML::BeginMap;
  if (policy.period_batches) {
    out << YAML::Key << "period" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "batches"
        << YAML::Value << *policy.period_batches << YAML::EndMap;
  } else if (policy.period_minutes) {
    out << YAML::Key << "period" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "minutes"
        << YAML::Value << Real{*policy.period_minutes} << YAML::EndMap;
  }
  out << YAML::Key << "keep_latest" << YAML::Value << policy.keep_latest;
  out << YAML::Key << "keep_best" << YAML::Value << policy.keep_best;
  out << YAML::Key << "keep_experiment_best" << YAML::Value << policy.keep_experiment_best;
  out << YAML::Key << "async" << YAML::Value << policy.async;
  out << YAML::EndMap;
}

}  // namespace

namespace {

// The top level's own values: name, entrypoint, seed, description, labels, records_per_epoch.
void emit_top_level(YAML::Emitter& out, const Experiment& experiment, bool seed_always) {
  out << YAML::Key << "name" << YAML::Value << experiment.name;
  out << YAML::Key << "entrypoint" << YAML::Value;
  if (experiment.entrypoint_is_shell) {
    out << YAML::DoubleQuoted << experiment.entrypoint.front();
  } else {
    out << YAML::Flow << YAML::BeginSeq;
    for (const auto& argument : experiment.entrypoint) out << YAML::DoubleQuoted << argument;
    out << YAML::EndSeq;
  }
  if (seed_always || experiment.seed_given) out << YAML::Key << "seed" << YAML::Value << experiment.seed;
  if (!experiment.description.empty()) {
    out << YAML::Key << "description" << YAML::Value << YAML::DoubleQuoted << experiment.description;
  }
  if (!experiment.labels.empty()) {
    out << YAML::Key << "labels" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& label : experiment.labels) out << YAML::DoubleQuoted << label;
    out << YAML::EndSeq;
  }
  if (experiment.records_per_epoch) {
    out << YAML::Key << "records_per_epoch" << YAML::Value << *experiment.records_per_epoch;
  }
}

// The hyperparameters nested as the file nested them (a key may contain '.'); a Hyperparameter
// made without a path nests at every '.' of its name.
void emit_hyperparameters(YAML::Emitter& out, const std::vector<Hyperparameter>& hyperparameters) {
  if (hyperparameters.empty()) return;
  Group root;
  for (const auto& hp : hyperparameters) {
    Group* group = &root;
    std::vector<std::string> path = hp.path;
    if (path.empty()) {
      std::string::size_type start = 0, dot;
      while ((dot = hp.name.find('.', start)) != std::string::npos) {
        path.push_back(hp.name.substr(start, dot - start));
        start = dot + 1;
      }
      path.push_back(hp.name.substr(start));
    }
    for (std::size_t k = 0; k + 1 < path.size(); ++k) group = &group->child(path[k]);
    group->child(path.back()).leaf = &hp;
  }
  out << YAML::Key << "hyperparameters" << YAML::Value;
  emit_group(out, root);
}

std::string emit_experiment(const Experiment& experiment, const std::string& header, bool seed_always) {
  YAML::Emitter out;
  out << YAML::Comment(header);
  out << YAML::BeginMap;
  emit_top_level(out, experiment, seed_always);
  emit_hyperparameters(out, experiment.hyperparameters);
  emit_searcher(out, experiment.searcher);
  emit_resources(out, experiment.resources);
  emit_checkpoint(out, experiment.checkpoint);
  if (!experiment.environment.empty()) {
    out << YAML::Key << "environment" << YAML::Value << YAML::BeginMap;
    for (const auto& [name, value] : experiment.environment) out << YAML::Key << name << YAML::Value << YAML::DoubleQuoted << value;
    out << YAML::EndMap;
  }
  out << YAML::Key << "max_restarts" << YAML::Value << experiment.max_restarts;
  detail::emit_code(out, experiment.code);
  detail::emit_data(out, experiment.data);
  detail::emit_container(out, experiment.container);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace

std::string to_yaml(const Experiment& experiment) {
  return emit_experiment(experiment, "frozen by dlx at submission: the configuration this experiment ran with", true);
}

std::string to_yaml_for_editing(const Experiment& experiment, const std::string& header) {
  return emit_experiment(experiment, header, false);
}

void write_snapshot(const Experiment& experiment, const std::filesystem::path& experiment_dir) {
  write_file_durably(experiment_dir / kSnapshotFileName, to_yaml(experiment), 0640);
}

}  // namespace dlx::config
