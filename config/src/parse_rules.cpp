// SPDX-License-Identifier: Apache-2.0
// Rules that span sections of the experiment file.
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dlx/config/names.hpp"
#include "parse_sections.hpp"

namespace dlx::config::detail {

namespace {

[[noreturn]] void fail_at(const MappingReader& root, const YAML::Node& at, const std::string& key,
                          const std::string& problem, const std::string& fix) {
  throw ConfigError(position_of(at, root.file()), key, problem, fix);
}

// Two hyperparameters must not collide in the environment (a-b and a_b are both DLX_HP_A_B), and
// DLX_HPARAMS nests dotted names (hparam_tree.hpp): `a` cannot be a value and the group of `a.b`.
void check_hyperparameter_names(const Experiment& experiment) {
  std::set<std::string> variables;
  for (const auto& hp : experiment.hyperparameters) {
    if (!variables.insert(hyperparameter_variable(hp.name)).second) {
      throw ConfigError(hp.where, "hyperparameters." + hp.name,
                        fmt::format("maps to the same variable {} as another hyperparameter",
                                    hyperparameter_variable(hp.name)),
                        "rename one of them");
    }
  }
  std::set<std::string> names;
  for (const auto& hp : experiment.hyperparameters) names.insert(hp.name);
  for (const auto& hp : experiment.hyperparameters) {
    for (auto dot = hp.name.find('.'); dot != std::string::npos; dot = hp.name.find('.', dot + 1)) {
      if (const std::string group = hp.name.substr(0, dot); names.contains(group)) {
        throw ConfigError(hp.where, "hyperparameters." + hp.name,
                          fmt::format("nests under '{}', which is a hyperparameter of its own: a trainer "
                                      "would see '{}' both as a value and as a group",
                                      group, group),
                          fmt::format("rename '{}' or '{}'", group, hp.name));
      }
    }
  }
}

// What a searcher asks of the hyperparameters and of its own keys.
void check_searcher_rules(const Experiment& experiment, const MappingReader& root) {
  const auto& searcher = experiment.searcher;
  YAML::Node section = root.raw("searcher");
  if (searcher.name == SearcherName::grid) {
    for (const auto& hp : experiment.hyperparameters) {
      bool needs_count = hp.type == HyperparameterType::integer || hp.type == HyperparameterType::real ||
                         hp.type == HyperparameterType::log;
      if (needs_count && !hp.count) {
        throw ConfigError(hp.where, "hyperparameters." + hp.name,
                          fmt::format("a {} hyperparameter needs count for the grid searcher", to_string(hp.type)),
                          "add count: N (the number of grid points)");
      }
    }
  }
  if (searcher.name == SearcherName::single) {
    if (searcher.max_trials > 1) {
      fail_at(root, section["max_trials"], "searcher.max_trials",
              fmt::format("the single searcher runs one trial, got max_trials: {}", searcher.max_trials),
              "remove max_trials or use the grid or random searcher");
    }
    // Ranged hyperparameters are fine: like Determined, single samples one point (from the seed).
  }
  // max_concurrent_trials above the trial count is no error (Determined takes the smaller): the
  // array's throttle is left out when it does not limit (searcher::array_spec).
  if (searcher.name == SearcherName::pbt && searcher.max_concurrent_trials > 0 &&
      searcher.max_concurrent_trials < searcher.pbt.population_size) {
    fail_at(root, section["max_concurrent_trials"], "searcher.max_concurrent_trials",
            fmt::format("is {}, below population_size ({}): a PBT round needs its whole population at once",
                        searcher.max_concurrent_trials, searcher.pbt.population_size),
            "raise it to population_size or set 0");
  }
}

// Packing shares an array task, and its GPUs, among trials that are one process each.
void check_packing_rules(const Experiment& experiment, const MappingReader& root) {
  const auto& resources = experiment.resources;
  const YAML::Node section = root.has("resources") ? root.raw("resources") : YAML::Node();  // site defaults
  const int gpus = resources.gpus_per_node.value_or(0);
  if (resources.trials_per_gpu && gpus == 0) {
    const char* key = section["gpus_per_trial"] ? "gpus_per_trial" : "trials_per_gpu";
    fail_at(root, section[key], fmt::format("resources.{}", key),
            "shares GPUs among trials, but the trial asks for none (resources.gpus_per_node)",
            "give gpus_per_node (the GPUs each array task holds), or pack CPU trials with trials_per_task");
  }
  // MPS: one user's daemon on GPUs the task holds whole. With shards, other users' jobs may
  // share the GPU, and an MPS server of one user makes the others' CUDA programs wait.
  if (resources.mps && (!resources.trials_per_gpu || *resources.trials_per_gpu < 2 ||
                        shares_gpus_by_shards(resources))) {
    fail_at(root, section["mps"], "resources.mps",
            shares_gpus_by_shards(resources)
                ? "asks for CUDA MPS, but the trials share GPUs as Slurm's shards (shards_per_gpu): other "
                  "jobs, of other users too, may run on the same GPU, and one user's MPS server would stall them"
                : "asks for CUDA MPS, which serves trials packed on one GPU, but no GPU is shared "
                  "(resources.trials_per_gpu is not 2 or more)",
            "use mps with trials_per_gpu: N (2 or more) in one task, without shards_per_gpu; or remove mps");
  }
  if (shares_gpus_by_shards(resources)) {
    // Slurm shares the GPU: each trial its own array task with shards_per_gpu / N shards.
    const char* key = section["gpus_per_trial"] ? "gpus_per_trial" : "trials_per_gpu";
    const int shards = *resources.shards_per_gpu;
    const int per_gpu = *resources.trials_per_gpu;
    if (per_gpu > shards || shards % per_gpu != 0) {
      std::vector<int> divisors;
      for (int d = 1; d <= shards; ++d) {
        if (shards % d == 0) divisors.push_back(d);
      }
      fail_at(root, section[key], fmt::format("resources.{}", key),
              fmt::format("shares each GPU among {} trials, which does not divide its {} shards "
                          "(resources.shards_per_gpu, the cluster's gres/shard per GPU): the trials would not get "
                          "equal shares, and Slurm would place more or fewer than {} on a GPU",
                          per_gpu, shards, per_gpu),
              fmt::format("use a divisor of {}: {}", shards, fmt::join(divisors, ", ")));
    }
    if (gpus > 1) {
      fail_at(root, section["gpus_per_node"], "resources.gpus_per_node",
              fmt::format("is {}, but with shards (resources.shards_per_gpu) a trial takes its share of one GPU", gpus),
              "set gpus_per_node: 1 (each trial's shards are on one GPU)");
    }
    if (resources.nodes_per_trial != 1 || resources.tasks_per_node != 1) {
      fail_at(root, section[key], fmt::format("resources.{}", key),
              fmt::format("shares a GPU among trials of one process each, but a trial has {} node{} x {} rank{}",
                          resources.nodes_per_trial, resources.nodes_per_trial == 1 ? "" : "s",
                          resources.tasks_per_node, resources.tasks_per_node == 1 ? "" : "s"),
              "share GPUs among single-process trials (nodes_per_trial: 1, tasks_per_node: 1), or give each "
              "trial whole GPUs");
    }
    return;
  }
  if (resources.trials_per_gpu && resources.trials_per_task &&
      *resources.trials_per_task != *resources.trials_per_gpu * gpus) {
    fail_at(root, section["trials_per_task"], "resources.trials_per_task",
            fmt::format("is {}, but {} trials per GPU on {} GPU{} make {}", *resources.trials_per_task,
                        *resources.trials_per_gpu, gpus, gpus == 1 ? "" : "s", *resources.trials_per_gpu * gpus),
            "keep one of trials_per_task and trials_per_gpu");
  }
  constexpr int kMostPacked = 256;  // slots of one array task (launcher/launch/task_slots.hpp)
  if (resources.trials_per_gpu && packed_trials(resources) > kMostPacked) {
    const char* key = section["gpus_per_trial"] ? "gpus_per_trial" : "trials_per_gpu";
    fail_at(root, section[key], fmt::format("resources.{}", key),
            fmt::format("packs {} trials per GPU on {} GPUs, {} in one array task: at most {}", *resources.trials_per_gpu,
                        gpus, packed_trials(resources), kMostPacked),
            "pack fewer trials per GPU, or give each array task fewer GPUs");
  }
  if (packed_trials(resources) > 1 && (resources.nodes_per_trial != 1 || resources.tasks_per_node != 1)) {
    const char* key = section["trials_per_task"] ? "trials_per_task"
                      : section["gpus_per_trial"] ? "gpus_per_trial"
                                                  : "trials_per_gpu";
    fail_at(root, section[key], fmt::format("resources.{}", key),
            fmt::format("packs trials of one process each, but a trial has {} node{} x {} rank{}",
                        resources.nodes_per_trial, resources.nodes_per_trial == 1 ? "" : "s",
                        resources.tasks_per_node, resources.tasks_per_node == 1 ? "" : "s"),
            "pack single-process trials (nodes_per_trial: 1, tasks_per_node: 1), or give each trial whole GPUs");
  }
}

}  // namespace

void check_cross_field_rules(const Experiment& experiment, const MappingReader& root) {
  check_hyperparameter_names(experiment);
  check_searcher_rules(experiment, root);
  check_packing_rules(experiment, root);
  if (experiment.checkpoint.keep_latest + experiment.checkpoint.keep_best == 0) {
    fail_at(root, root.raw("checkpoint"), "checkpoint",
            "keep_latest and keep_best are both 0: no checkpoint would survive to resume from",
            "keep at least one (keep_latest: 1)");
  }
}

}  // namespace dlx::config::detail
