// SPDX-License-Identifier: Apache-2.0
#pragma once
// The trials an experiment runs: trial i is array task i. Every trial's hyperparameters are a
// pure function of the frozen experiment (its seed included) and i, so the plugin can size the
// array at submission and each array task can compute its own trial later, on any node, without
// coordination. Grid: the cartesian product in file order (the last hyperparameter varies
// fastest). Random: each value drawn from a stream keyed by (seed, trial, hyperparameter index).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlx/config/experiment.hpp"

namespace dlx::searcher {

struct TrialSpec {
  int id = 0;
  nlohmann::ordered_json hparams;  // flat: "optim.lr" -> 0.01, in file order
};

// How many trials the experiment runs. Throws config::ConfigError (e.g. a grid larger than
// max_trials or than the overall limit).
int trial_count(const config::Experiment& experiment);

// Trial `id` (0 <= id < trial_count). Throws std::out_of_range for other ids.
TrialSpec plan_trial(const config::Experiment& experiment, int id);

std::vector<TrialSpec> plan_all_trials(const config::Experiment& experiment);

// The array's throttle: max_concurrent_trials (Determined's default 16 when the file omits it;
// PBT: the population), or 0 when it would not limit (0 = no limit, or not below the task count).
// Never above the task count, which the plugin checks against the cluster's MaxArraySize, so the
// throttle never exceeds MaxArraySize either.
int array_throttle(const config::Experiment& experiment);

// sbatch's --array value: "0-7%2" (the throttle only when it limits), "0" for one trial.
std::string array_spec(const config::Experiment& experiment);

// Tickets and array tasks. Normally one array task per ticket (task t runs ticket t). With
// resources.max_array_tasks N below the ticket count T, the array has N tasks and task t runs
// tickets t, t + N, t + 2N, ... below T, one after another, so that any number of trials fits a
// cluster's MaxArraySize (or a user's job limit). Ticket k is always run by task k % N.
// Packed (resources.trials_per_gpu / trials_per_task P > 1): ceil(T / P) tasks (or fewer, as
// above), each running its tickets P at a time; the throttle counts tasks, ceil(trials / P).
int array_task_count(const config::Experiment& experiment);
// The tickets array task `task` runs, in order (empty for a task past the array).
std::vector<int> tickets_of_task(const config::Experiment& experiment, int task);
// The array task that runs `ticket`.
int task_of_ticket(const config::Experiment& experiment, int ticket);
// How each array task runs its tickets, for messages: "up to 5 in turn", "up to 4 at once",
// "up to 8, 4 at once".
std::string task_load_text(const config::Experiment& experiment);
// How trials share GPUs through Slurm's shards (config::shares_gpus_by_shards), for messages:
// "each trial asks for 2 of a GPU's 4 shards (--gres=shard:2): Slurm places up to 2 trials on
// one GPU"; empty when they do not.
std::string shard_sharing_text(const config::Experiment& experiment);
// What makes the array smaller than the tickets: "resources.max_array_tasks" where that cap
// binds, else the packing key ("resources.trials_per_gpu", "resources.trials_per_task").
std::string array_tasks_cause(const config::Experiment& experiment);

// What sbatch does with a search whose array would exceed the cluster's MaxArraySize: sets
// resources.max_array_tasks to it, so that each task runs several tickets in turn. Returns
// whether it did (false when the array already fits). `dlx validate` and `dlx plan` apply it too,
// when they know the limit, so that they show the array sbatch will submit.
bool fit_array_to_cluster(config::Experiment& experiment, unsigned max_array_size);

}  // namespace dlx::searcher
