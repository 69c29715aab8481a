// SPDX-License-Identifier: Apache-2.0
#include "dlx/searcher/trial_plan.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "dlx/config/names.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/searcher/method.hpp"
#include "asha/asha_layout.hpp"
#include "fixed/grid.hpp"
#include "pbt/pbt_round.hpp"
#include "methods.hpp"

namespace dlx::searcher {

using config::SearcherName;

int trial_count(const config::Experiment& experiment) {
  const auto& searcher = experiment.searcher;
  switch (searcher.name) {
    case SearcherName::single:
      return 1;
    case SearcherName::random:
      return searcher.max_trials;
    case SearcherName::async_halving:
    case SearcherName::adaptive_asha:
      return detail::asha_trial_total(experiment);
    case SearcherName::pbt: {
      // P members for R rounds take P x R tickets; the trials are round 0's P plus the n new
      // ones each later round starts (pbt_round.hpp: Determined's numbering).
      std::int64_t tickets = std::int64_t{searcher.pbt.population_size} * searcher.pbt.num_rounds;
      if (tickets > config::kMaxTrials) {
        throw config::ConfigError(searcher.where, "searcher",
                                  fmt::format("population_size x num_rounds is {}, over {}", tickets, config::kMaxTrials),
                                  "lower population_size or num_rounds");
      }
      return detail::pbt_trial_total(searcher.pbt);
    }
    case SearcherName::grid: {
      std::int64_t size = detail::grid_size(experiment, config::kMaxTrials);
      if (size < 0) {
        throw config::ConfigError(searcher.where, "searcher",
                                  fmt::format("the grid has more than {} points", config::kMaxTrials),
                                  "lower the count of some hyperparameters");
      }
      if (searcher.max_trials > 0 && size > searcher.max_trials) {
        throw config::ConfigError(
            searcher.where, "searcher.max_trials",
            fmt::format("the grid has {} points but max_trials is {}", size, searcher.max_trials),
            fmt::format("raise max_trials to {} or lower the counts", size));
      }
      return static_cast<int>(size);
    }
  }
  return 1;
}

TrialSpec plan_trial(const config::Experiment& experiment, int id) {
  if (id < 0 || id >= trial_count(experiment)) {
    throw std::out_of_range(fmt::format("trial {} is outside 0..{}", id, trial_count(experiment) - 1));
  }
  TrialSpec trial;
  trial.id = id;
  switch (experiment.searcher.name) {
    case SearcherName::grid:
      trial.hparams = detail::grid_point(experiment, id);
      break;
    case SearcherName::single:  // Determined's single samples one point of ranged hyperparameters
    case SearcherName::random:
    case SearcherName::async_halving:
    case SearcherName::adaptive_asha:
    case SearcherName::pbt:
      trial.hparams = detail::random_point(experiment, id);
      break;
  }
  return trial;
}

std::vector<TrialSpec> plan_all_trials(const config::Experiment& experiment) {
  std::vector<TrialSpec> trials;
  const int count = trial_count(experiment);
  trials.reserve(static_cast<std::size_t>(count));
  const auto name = experiment.searcher.name;
  if (name == SearcherName::grid) {
    // One Grid for every point: linear in the number of trials.
    const detail::Grid grid(experiment, config::kMaxTrials);
    for (int id = 0; id < count; ++id) trials.push_back({id, grid.point(id)});
    return trials;
  }
  for (int id = 0; id < count; ++id) trials.push_back({id, detail::random_point(experiment, id)});
  return trials;
}

int array_throttle(const config::Experiment& experiment) {
  // Trials at once, in tasks: a packed task runs packed_trials of them at once.
  const int per_task = config::packed_trials(experiment.resources);
  const int trials = experiment.searcher.max_concurrent_trials;
  const int limit = trials > 0 ? (trials + per_task - 1) / per_task : 0;
  return limit > 0 && limit < array_task_count(experiment) ? limit : 0;
}

std::string array_spec(const config::Experiment& experiment) {
  const int count = array_task_count(experiment);
  std::string spec = count == 1 ? "0" : fmt::format("0-{}", count - 1);
  if (const int throttle = array_throttle(experiment); throttle > 0) spec += fmt::format("%{}", throttle);
  return spec;
}

int array_task_count(const config::Experiment& experiment) {
  const int tickets = ticket_count(experiment);
  const int per_task = config::packed_trials(experiment.resources);
  const int packed = static_cast<int>((static_cast<long long>(tickets) + per_task - 1) / per_task);
  const auto most = experiment.resources.max_array_tasks;
  return most && *most < packed ? *most : packed;
}

std::vector<int> tickets_of_task(const config::Experiment& experiment, int task) {
  const int tickets = ticket_count(experiment);
  const int tasks = array_task_count(experiment);
  std::vector<int> out;
  if (task < 0 || task >= tasks) return out;
  for (long long ticket = task; ticket < tickets; ticket += tasks) out.push_back(static_cast<int>(ticket));
  return out;
}

int task_of_ticket(const config::Experiment& experiment, int ticket) {
  const int tasks = array_task_count(experiment);
  return tasks > 0 ? ticket % tasks : 0;
}

std::string task_load_text(const config::Experiment& experiment) {
  const auto most = tickets_of_task(experiment, 0).size();
  const auto at_once = static_cast<std::size_t>(config::packed_trials(experiment.resources));
  if (at_once <= 1) return fmt::format("up to {} in turn", most);
  if (most <= at_once) return fmt::format("up to {} at once", most);
  return fmt::format("up to {}, {} at once", most, at_once);
}

std::string shard_sharing_text(const config::Experiment& experiment) {
  const auto& resources = experiment.resources;
  if (!config::shares_gpus_by_shards(resources)) return "";
  const int shards = config::shards_per_trial(resources);
  return fmt::format("each trial asks for {} of a GPU's {} shards (--gres=shard:{}, resources.shards_per_gpu): "
                     "Slurm places up to {} trials on one GPU, each with its own array task",
                     shards, *resources.shards_per_gpu, shards, *resources.shards_per_gpu / shards);
}

std::string array_tasks_cause(const config::Experiment& experiment) {
  const auto& resources = experiment.resources;
  const int per_task = config::packed_trials(resources);
  const long long packed = (static_cast<long long>(ticket_count(experiment)) + per_task - 1) / per_task;
  if (resources.max_array_tasks && *resources.max_array_tasks < packed) return "resources.max_array_tasks";
  if (resources.trials_per_task) return "resources.trials_per_task";
  if (resources.trials_per_gpu) return "resources.trials_per_gpu";
  return "resources.max_array_tasks";
}

bool fit_array_to_cluster(config::Experiment& experiment, unsigned max_array_size) {
  // MaxArraySize 0 disables arrays altogether: nothing to fit (sbatch then rejects --array).
  if (max_array_size == 0 || static_cast<unsigned>(array_task_count(experiment)) <= max_array_size) return false;
  experiment.resources.max_array_tasks = static_cast<int>(std::min<unsigned>(max_array_size, std::numeric_limits<int>::max()));
  return true;
}

}  // namespace dlx::searcher
