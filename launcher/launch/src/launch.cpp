// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/launch.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>

#include <fmt/format.h>

#include "dlx/common/host_name.hpp"
#include "dlx/common/unique_fd.hpp"
#include "dlx/env/trial_context.hpp"
#include "dlx/launch/child_process.hpp"
#include "dlx/launch/launch_error.hpp"
#include "dlx/launch/mps_daemon.hpp"
#include "dlx/launch/task_slots.hpp"
#include "dlx/launch/task_tickets.hpp"
#include "dlx/slurm/task_placement.hpp"
#include "launch_state.hpp"

namespace dlx::launch {

namespace {

// One ticket's run: the phases of launch.hpp over one LaunchState. `gave_slot_back`, when given,
// says whether the ticket gave its place back while it waited for the searcher (its 85).
int run_ticket(const Options& options, const env::EnvMap& env, const Resolver& resolve, std::FILE* out,
               bool* gave_slot_back = nullptr) {
  LaunchState state(options, env::TrialContext(env, slurm::read_task_placement(env, host_name())));
  prepare(state, resolve);
  if (const auto done = take_work(state)) {
    if (gave_slot_back) *gave_slot_back = state.gave_slot_back;
    return *done;
  }
  if (options.dry_run) {
    print_dry_run(out, state);
    return 0;
  }
  try {
    try {
      if (const auto requeue = enter_code(state)) return *requeue;
      if (const auto status = stage_data(state)) return *status;
      if (const auto status = settle_master_port(state)) return *status;
      enter_container(state);
    } catch (const std::exception& error) {
      refuse_trial_before_trainer(state, error.what());
      throw;
    }
    const int status = run_and_account(state);
    keep_outputs(state);
    return status;
  } catch (const std::exception& error) {
    // main prints the error once this rank's output no longer goes through the trial's log (the
    // state is gone by then): the log gets the same line here, so that `dlx logs` ends with why
    // the attempt ended, not only Slurm's output file.
    if (state.trial_log) state.trial_log->restore_and_log(launch_error_line(error.what()));
    throw;
  }
}

// The task's tickets when it runs several (task_tickets.hpp); nullopt otherwise, also when the
// snapshot cannot be read: the ticket's own run then says why.
std::optional<TaskTickets> tickets_of_this_task(const Options& options, const env::EnvMap& env) {
  if (options.dry_run) return std::nullopt;
  try {
    env::TrialContext context(env, slurm::read_task_placement(env, host_name()));
    if (!context.in_trial() || !context.trial().ticket) return std::nullopt;
    const auto* experiment = context.experiment();
    if (!experiment) return std::nullopt;
    return task_tickets(*experiment, *context.trial().experiment_dir, static_cast<int>(*context.trial().ticket));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

int run_task(const TaskTickets& task, const Options& options, const env::EnvMap& env, const Resolver& resolve,
             std::FILE* out) {
  const bool rank0 = slurm::read_task_placement(env, host_name()).rank == 0;
  const int count = static_cast<int>(task.tickets.size());
  auto done = tickets_done(task);
  std::vector<int> left;
  for (const int ticket : task.tickets) {
    if (!done.contains(ticket)) left.push_back(ticket);
  }
  if (rank0 && left.empty()) {
    fmt::print(stderr, "dlx-launch: task {}: all {} of its tickets are done; nothing left to run\n", task.task, count);
  } else if (rank0 && !done.empty()) {
    fmt::print(stderr, "dlx-launch: task {}: {} of its {} tickets done; going on with ticket {}\n", task.task,
               done.size(), count, left.front());
  }
  // Each ticket starts where the task started (an earlier one entered its code copy), in its own
  // environment and no other.
  const UniqueFd start_dir(::open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto enter = [&](const env::EnvMap& ticket_env) {
    replace_process_environment(ticket_env);
    if (start_dir && ::fchdir(start_dir.get()) != 0) {
      throw LaunchError(fmt::format("task {}: cannot return to the task's working directory: {}", task.task,
                                    std::strerror(errno)));
    }
  };
  if (task.at_once > 1) {
    // CUDA MPS for the task's trials (mps_daemon.hpp), stopped when this returns or throws. A
    // daemon that cannot start leaves the trials to share the GPUs in turns, as without mps.
    std::unique_ptr<MpsDaemon> mps;
    TaskTickets packed = task;
    env::EnvMap packed_env = env;
    if (task.mps && !left.empty()) {
      try {
        mps = MpsDaemon::start(env);
        packed.gpus_as_mps_numbers = true;
        mps->add_client_environment(packed_env);
        if (rank0) fmt::print(stderr, "dlx-launch: task {}: CUDA MPS started ({})\n", task.task, mps->pipe_directory().string());
      } catch (const std::exception& error) {
        fmt::print(stderr, "dlx-launch: task {}: resources.mps: CUDA MPS did not start: {}; the trials share the "
                           "GPUs in turns\n", task.task, error.what());
      }
    }
    // Each ticket in a child process of its own (task_slots.hpp).
    return run_packed_task(packed, left, done, packed_env, [&](const env::EnvMap& slot_env) {
      enter(slot_env);
      SlotRun run;
      run.status = run_ticket(options, slot_env, resolve, out, &run.gave_slot_back);
      return run;
    });
  }
  int failed = 0;
  for (std::size_t next = 0; next < left.size(); ++next) {
    const int ticket = left[next];
    const auto ticket_env = ticket == task.task ? env : ticket_environment(env, ticket);
    enter(ticket_env);
    if (rank0) {
      const auto position = std::find(task.tickets.begin(), task.tickets.end(), ticket) - task.tickets.begin();
      fmt::print(stderr, "dlx-launch: task {}: ticket {} ({} of {})\n", task.task, ticket, position + 1, count);
    }
    int status = 0;
    try {
      status = run_ticket(options, ticket_env, resolve, out);
    } catch (const std::exception& error) {
      // dlx-launch itself failed (not the trainer): most such causes (the entrypoint, the code
      // snapshot, the node) would fail every later ticket alike, so the task stops here and says
      // which tickets it leaves; a requeue runs them and skips the finished ones.
      if (next + 1 == left.size()) throw;
      throw LaunchError(fmt::format("task {}: ticket {}: {} (the task stops: {} did not run; once this is fixed, "
                                    "`scontrol requeue` of the task runs them and skips the ones it finished)",
                                    task.task, ticket, error.what(), tickets_text(left, next + 1)));
    }
    if (status == env::kRequeueExitCode) return status;  // the task is requeued; done tickets stay done
    if (status != 0) failed = status;
    done.insert(ticket);
    if (rank0) record_tickets_done(task, done);
  }
  return failed;
}

}  // namespace

int run_launch(const Options& options, const env::EnvMap& env, const Resolver& resolve,
               std::FILE* out) {
  install_notice_handlers();  // a preemption notice during start-up must not kill dlx-launch
  // The plugin refused this trial in slurmstepd (e.g. an experiment directory another user could
  // have changed): nothing in the directory is read or written, the trainer never runs.
  if (const auto refusal = env::lookup(env, "DLX_REFUSED"); refusal && !refusal->empty()) {
    throw LaunchError(fmt::format("not running the trial: the dlx plugin refused it: {}", *refusal));
  }
  if (const auto task = tickets_of_this_task(options, env)) return run_task(*task, options, env, resolve, out);
  return run_ticket(options, env, resolve, out);
}

}  // namespace dlx::launch
