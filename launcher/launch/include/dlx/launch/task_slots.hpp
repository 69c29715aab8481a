// SPDX-License-Identifier: Apache-2.0
#pragma once
// Packing: an array task that runs its tickets several at once (resources.trials_per_gpu or
// trials_per_task P > 1; every trial one process on one node, which the config checks). The
// protocol, in the task's one dlx-launch:
//   - dlx-launch stays the parent and never runs a trainer itself. It keeps up to P slots busy;
//     a slot is a child process (fork) that runs one ticket as a whole dlx-launch run (launch.hpp:
//     the searcher's work for it, the trainer, its exit accounted) in the ticket's environment,
//     and exits with that run's status. A slot that ends takes the next ticket not done, in the
//     task's order: each ticket asks the searcher for its own work (ASHA, PBT), and a waiting
//     ticket only waits for lower ones, which the task started first;
//   - slot s gets DLX_SLOT=s; with trials_per_gpu N the task's GPUs are shared: slot s sees only
//     GPU s mod G of the task's G (CUDA_VISIBLE_DEVICES), and DLX_GPU_MEMORY_FRACTION=1/N, which
//     dlx.torch applies, so that a trial running out of memory fails alone;
//   - the parent records a ticket done (tasks/<task>.json, task_tickets.hpp) when its slot exits
//     with anything but 85; exit 85 (a notice, a crash to restart) starts no new ticket, lets the
//     running ones end (a notice reaches them all: Slurm signals the step, and the parent forwards
//     what it gets), and ends the task with 85: the requeued task runs the tickets not done,
//     resuming each from its checkpoint;
//   - a ticket that waits for the searcher and gives its place back (searcher_work.hpp: a trial of
//     another array task waits to resume) says so through a pipe and exits 85. It is not done, and
//     the task goes on: it is started again once another slot ends (the search may then have work
//     for it), and only when nothing in the task runs any more does the task end with 85, giving
//     its array slot to the waiting trial;
//   - a slot's own dlx-launch failing (not its trainer) says so through the pipe: no new ticket
//     starts, and once the running ones end the task fails naming the tickets it left (a
//     requeue runs them);
//   - each slot is a process group: a slot killed from outside (SIGKILL: the OOM killer) has its
//     group (its trainer) ended too, its ticket is not done, and the task requeues once the others
//     end (another signal, a dlx-launch crash, stops the task as a failure does);
//   - the task's status: 85 if any slot asked for a requeue, else the last failed ticket's, else 0.
#include <functional>
#include <set>
#include <vector>

#include "dlx/env/environment.hpp"
#include "dlx/launch/task_tickets.hpp"

namespace dlx::launch {

// One ticket's run in its slot: the exit status, and whether it gave its place back (above).
struct SlotRun {
  int status = 0;
  bool gave_slot_back = false;
};

// Runs one ticket in a slot process, in `slot_env` (which it makes the process environment).
// May throw: the slot then reports its own failure.
using RunSlot = std::function<SlotRun(const env::EnvMap& slot_env)>;

// Runs `left` (the task's tickets not done, in order) task.at_once at a time; adds each ticket
// that ends for good to `done` and records it. Returns the task's exit status.
int run_packed_task(const TaskTickets& task, const std::vector<int>& left, std::set<int>& done,
                    const env::EnvMap& task_env, const RunSlot& run);

// The environment of `ticket` in slot `slot`: ticket_environment() plus DLX_SLOT and, with
// task.trials_per_gpu, the slot's GPU and memory fraction.
env::EnvMap slot_environment(const TaskTickets& task, const env::EnvMap& task_env, int ticket, int slot);

}  // namespace dlx::launch
