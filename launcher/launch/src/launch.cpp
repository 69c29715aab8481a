#include "dlx/launch/launch.hpp"

#include <unistd.h>

#include <array>
#include <cstdlib>

#include <fmt/format.h>

#include "dlx/config/parse.hpp"
#include "dlx/env/trial_environment.hpp"
#include "dlx/launch/allocation_check.hpp"
#include "dlx/launch/child_process.hpp"
#include "dlx/launch/launch_error.hpp"
#include "dlx/launch/trial_outcome.hpp"
#include "dlx/slurm/task_placement.hpp"

namespace dlx::launch {

namespace {

std::string host_name() {
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) return "unknown-host";
  return host.data();
}

std::vector<std::string> entrypoint_command(const config::Experiment& experiment) {
  if (experiment.entrypoint.empty()) {
    throw LaunchError(fmt::format("dlx-launch: experiment '{}' has no entrypoint (add "
                                  "entrypoint: to the experiment file, or run dlx-launch -- "
                                  "COMMAND)", experiment.name));
  }
  if (experiment.entrypoint_is_shell) return {"/bin/sh", "-c", experiment.entrypoint.front()};
  return experiment.entrypoint;
}

void print_dry_run(std::FILE* out, const slurm::TaskPlacement& placement, const EnvVars& vars,
                   const env::EnvMap& env, const std::vector<std::string>& command) {
  fmt::print(out, "# dlx-launch: {} environment, node {}, rank {} of {}\n",
             slurm::to_string(placement.launcher), placement.node_name, placement.rank,
             placement.world_size);
  for (const auto& [name, value] : vars) fmt::print(out, "{}={}\n", name, value);
  for (const auto& [name, value] : env) {
    if (name.starts_with("DLX_")) fmt::print(out, "{}={}\n", name, value);
  }
  fmt::print(out, "# command: {}\n", fmt::join(command, " "));
}

// Best effort: the exit status reaches Slurm anyway; only the record could not say it.
void record_failure(const env::TrialEnvironment& trial, const slurm::TaskPlacement& placement,
                    int status) {
  try {
    record_trainer_exit(trial, placement, status);
  } catch (const std::exception& error) {
    fmt::print(stderr, "dlx-launch: warning: cannot record exit {} in the trial record: {}\n",
               status, error.what());
  }
}

}  // namespace

int run_launch(const Options& options, const env::EnvMap& env, const Resolver& resolve,
               std::FILE* out) {
  const auto placement = slurm::read_task_placement(env, host_name());
  const auto trial = env::read_trial_environment(env);
  const EnvVars vars = compute_launch_env(placement, env, resolve);

  std::optional<config::Experiment> experiment;
  const bool under_srun = placement.launcher == slurm::Launcher::srun;
  if (trial.in_trial() && (options.command.empty() || under_srun)) {
    experiment = config::load_snapshot(*trial.experiment_dir);
    if (under_srun) {
      try {
        check_allocation(placement, experiment->resources);
      } catch (const LaunchError&) {
        // The trainer never runs: rank 0 marks the trial failed so `dlx status` says so.
        if (placement.rank == 0) record_failure(trial, placement, 1);
        throw;
      }
    }
  }
  std::vector<std::string> command = options.command;
  if (command.empty()) {
    if (!experiment) {
      throw LaunchError(
          "dlx-launch: no command to run: this is not a dlx trial (DLX_EXPERIMENT_DIR is not set) "
          "and no command was given (submit with sbatch --dl-experiment=FILE, or run "
          "dlx-launch -- COMMAND ARGS...)");
    }
    command = entrypoint_command(*experiment);
  }
  if (options.dry_run) {
    print_dry_run(out, placement, vars, env, command);
    return 0;
  }

  for (const auto& [name, value] : vars) ::setenv(name.c_str(), value.c_str(), 1);
  const int status = run_child(command);
  if (placement.rank == 0 && status != 0) record_failure(trial, placement, status);
  return status;
}

}  // namespace dlx::launch
