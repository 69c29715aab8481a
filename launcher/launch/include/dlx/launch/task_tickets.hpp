// SPDX-License-Identifier: Apache-2.0
#pragma once
// An array task that runs several tickets in turn. When an experiment has more tickets than array
// tasks (resources.max_array_tasks, which the plugin sets to the cluster's MaxArraySize when the
// tickets would not fit), task t runs tickets t, t + N, t + 2N, ... (searcher/trial_plan.hpp).
// The protocol, on every rank of the task:
//   - each ticket is a whole dlx-launch run (the searcher's work for it, the trainer, its exit
//     accounted: launch.hpp), started from the process environment and working directory the
//     task began with, the ticket's own DLX_TICKET and DLX_TRIAL_ID in place of the first's;
//   - once a ticket has ended for good (exit 0: its work done, or none; any other exit but 85:
//     its trial failed for good), rank 0 records which of the task's tickets are done in
//     <experiment>/tasks/<task>.json (temp + fsync + rename; rank 0 of the task is its only
//     writer);
//   - exit 85 from a ticket (Slurm's notice, a crash to restart, a waiting ticket giving back its
//     slot) ends the task with 85: Slurm requeues it, and each rank starts again with the
//     tickets not done, which it reads as it starts;
//   - packed (resources.trials_per_gpu / trials_per_task P > 1, trials of one process): the task
//     runs its tickets P at a time, each in a child process of its own (task_slots.hpp); a
//     ticket's exit 85 lets the others finish or checkpoint, starts no new one, and ends the task
//     with 85 (but for a waiting ticket giving back its slot: the task goes on without it);
//   - the task exits 0 when every ticket ended well, else with the last failed ticket's status.
// The ranks agree on where to start: rank 0 counts a ticket done only after its trainer exited,
// which on a trial of several ranks needs the others' trainers (their rendezvous) or, for a
// trainer that never got that far, the crash every rank takes (peer_crash.hpp).
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dlx/config/experiment.hpp"
#include "dlx/env/environment.hpp"

namespace dlx::launch {

struct TaskTickets {
  int task = 0;              // the array task (its first ticket)
  std::vector<int> tickets;  // what it runs, in order
  std::filesystem::path progress;  // <experiment>/tasks/<task>.json
  int at_once = 1;           // tickets run at once (packing: config::packed_trials)
  int trials_per_gpu = 0;    // > 0: the task's GPUs are shared, each by this many trials
  bool mps = false;          // resources.mps: the task runs a CUDA MPS daemon (mps_daemon.hpp)
  // Set while that daemon runs: slots name their GPU as MPS numbers the task's (0 to G-1).
  bool gpus_as_mps_numbers = false;
};

// This task's tickets when it runs more than one: the ticket dlx-launch was started for (the
// plugin's DLX_TICKET, the array index) is the task. nullopt for one ticket per task, and for a
// ticket past the array (run by hand: that ticket alone).
std::optional<TaskTickets> task_tickets(const config::Experiment& experiment, const std::filesystem::path& experiment_dir,
                                        int ticket);

// The task's tickets that are done (none when the file is missing; a damaged file says so on
// stderr and counts none, so that nothing is skipped). Reads {"done": [...]} and the first
// form, {"tickets_done": N} (the first N tickets).
std::set<int> tickets_done(const TaskTickets& task);
// Records which tickets are done (rank 0). Throws dlx::Error on failure.
void record_tickets_done(const TaskTickets& task, const std::set<int>& done);

// "its ticket 4" or "its tickets 4, 6, 8": tickets[from...], for messages.
std::string tickets_text(const std::vector<int>& tickets, std::size_t from);

// The environment ticket `ticket` runs with: `task_env` (the task's first ticket's) with the
// ticket and trial ids replaced and the first trial's hyperparameters and checkpoint directory
// cleared (dlx-launch sets the ticket's from the searcher's answer).
env::EnvMap ticket_environment(const env::EnvMap& task_env, int ticket);

// Makes the process environment exactly `env` (the next ticket must not inherit the variables an
// earlier one exported for its trainer).
void replace_process_environment(const env::EnvMap& env);

}  // namespace dlx::launch
