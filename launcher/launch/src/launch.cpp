// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/launch.hpp"

#include <fmt/format.h>

#include "dlx/common/host_name.hpp"
#include "dlx/env/trial_context.hpp"
#include "dlx/launch/child_process.hpp"
#include "dlx/launch/launch_error.hpp"
#include "dlx/slurm/task_placement.hpp"
#include "launch_state.hpp"

namespace dlx::launch {

int run_launch(const Options& options, const env::EnvMap& env, const Resolver& resolve,
               std::FILE* out) {
  install_notice_handlers();  // a preemption notice during start-up must not kill dlx-launch
  // The plugin refused this trial in slurmstepd (e.g. an experiment directory another user could
  // have changed): nothing in the directory is read or written, the trainer never runs.
  if (const auto refusal = env::lookup(env, "DLX_REFUSED"); refusal && !refusal->empty()) {
    throw LaunchError(fmt::format("not running the trial: the dlx plugin refused it: {}", *refusal));
  }
  LaunchState state(options, env::TrialContext(env, slurm::read_task_placement(env, host_name())));
  prepare(state, resolve);
  if (const auto done = take_work(state)) return *done;
  if (options.dry_run) {
    print_dry_run(out, state);
    return 0;
  }
  if (const auto requeue = enter_code(state)) return *requeue;
  if (const auto requeue = stage_data(state)) return *requeue;
  return run_and_account(state);
}

}  // namespace dlx::launch
