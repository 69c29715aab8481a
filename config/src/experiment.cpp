// SPDX-License-Identifier: Apache-2.0
#include "dlx/config/experiment.hpp"

#include <algorithm>

namespace dlx::config {

bool shares_gpus_by_shards(const Resources& resources) {
  return resources.trials_per_gpu && resources.shards_per_gpu && !resources.trials_per_task;
}

int shards_per_trial(const Resources& resources) {
  return shares_gpus_by_shards(resources) ? std::max(1, *resources.shards_per_gpu / *resources.trials_per_gpu) : 0;
}

int packed_trials(const Resources& resources) {
  if (resources.trials_per_task) return *resources.trials_per_task;
  if (shares_gpus_by_shards(resources)) return 1;
  if (resources.trials_per_gpu) return *resources.trials_per_gpu * std::max(1, resources.gpus_per_node.value_or(1));
  return 1;
}

const char* to_string(HyperparameterType type) {
  switch (type) {
    case HyperparameterType::constant: return "const";
    case HyperparameterType::integer: return "int";
    case HyperparameterType::real: return "double";
    case HyperparameterType::log: return "log";
    case HyperparameterType::categorical: return "categorical";
  }
  return "?";
}

const char* to_string(SearcherName name) {
  switch (name) {
    case SearcherName::single: return "single";
    case SearcherName::grid: return "grid";
    case SearcherName::random: return "random";
    case SearcherName::async_halving: return "async_halving";
    case SearcherName::adaptive_asha: return "adaptive_asha";
    case SearcherName::pbt: return "pbt";
  }
  return "?";
}

const char* to_string(Length::Unit unit) {
  switch (unit) {
    case Length::Unit::batches: return "batches";
    case Length::Unit::records: return "records";
    case Length::Unit::epochs: return "epochs";
  }
  return "?";
}

const char* to_string(AshaOptions::Mode mode) {
  switch (mode) {
    case AshaOptions::Mode::aggressive: return "aggressive";
    case AshaOptions::Mode::standard: return "standard";
    case AshaOptions::Mode::conservative: return "conservative";
  }
  return "?";
}

const char* to_string(SamplerName name) {
  switch (name) {
    case SamplerName::random: return "random";
    case SamplerName::tpe: return "tpe";
  }
  return "?";
}

}  // namespace dlx::config
