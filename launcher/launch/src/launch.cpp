#include "dlx/launch/launch.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <functional>

#include <fmt/format.h>

#include "dlx/config/parse.hpp"
#include "dlx/env/trial_environment.hpp"
#include "dlx/env/trusted_snapshot.hpp"
#include "dlx/launch/allocation_check.hpp"
#include "dlx/launch/child_process.hpp"
#include "dlx/launch/code_workdir.hpp"
#include "dlx/launch/data_barrier.hpp"
#include "dlx/launch/launch_error.hpp"
#include "dlx/launch/peer_crash.hpp"
#include "dlx/launch/resume_checkpoint.hpp"
#include "dlx/launch/searcher_work.hpp"
#include "dlx/launch/trial_data.hpp"
#include "dlx/launch/trial_log.hpp"
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
    throw LaunchError(fmt::format("experiment '{}' has no entrypoint (add "
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
    const bool computed = std::any_of(vars.begin(), vars.end(),
                                      [&](const auto& var) { return var.first == name; });
    if (name.starts_with("DLX_") && !computed) fmt::print(out, "{}={}\n", name, value);
  }
  fmt::print(out, "# command: {}\n", fmt::join(command, " "));
}

// A LaunchError's message (without the "dlx-launch: " main prints before it) as the trial record
// keeps it: saying that dlx-launch, not the trainer, stopped the trial.
std::string refusal_record(std::string_view message) { return fmt::format("dlx-launch: {}", message); }

// Best effort: the exit status reaches Slurm anyway; only the record could not say it.
void record_failure(const env::TrialEnvironment& trial, const slurm::TaskPlacement& placement,
                    int status, std::string_view what,
                    const ExitDecision& decision = {.status = 1, .crash = true},
                    std::optional<int> max_restarts = std::nullopt) {
  try {
    record_trainer_exit(trial, placement, status, what, decision, max_restarts);
  } catch (const std::exception& error) {
    fmt::print(stderr, "dlx-launch: warning: cannot record exit {} in the trial record: {}\n",
               status, error.what());
  }
}

// The record as this run starts (its failure count decides crash restarts on every rank alike).
std::optional<record::TrialRecord> record_at_start(const env::TrialEnvironment& trial) {
  if (!trial.in_trial()) return std::nullopt;
  try {
    return record::load_trial_record_if_exists(trial.record_path());
  } catch (const std::exception& error) {
    fmt::print(stderr, "dlx-launch: warning: cannot read the trial record: {}\n", error.what());
    return std::nullopt;
  }
}

// A trial runs only as the tasks of a launched step (srun in the job script; mpirun in tests and
// by hand). Two mistakes look like a trial but are not, and both are refused before anything is
// touched: dlx-launch in the batch script itself, without srun (the trial would run as one process
// on one node whatever its resources, and the preemption notice, sent to job steps, would never
// reach it), and a shell that kept DLX_EXPERIMENT_DIR but has no ticket (ticket 0 would be taken
// and trial 0's record rewritten, completed or not).
void refuse_unlaunched_trial(const slurm::TaskPlacement& placement, const env::TrialEnvironment& trial,
                             const env::EnvMap& env, bool dry_run) {
  if (!trial.in_trial() || placement.launcher != slurm::Launcher::none) return;
  if (!trial.slurm_job_id.empty()) {
    const std::string why = fmt::format(
        "not started by srun: this is job {}'s batch script (or another process outside "
        "a job step), where the trial would run as one process on this node whatever its resources "
        "and would never get the preemption notice (start it with srun, as examples/job.sh does: "
        "srun --mpi=pmix dlx-launch)",
        trial.slurm_job_id);
    // The trainer never runs: mark the trial failed so that `dlx status` says so.
    if (!dry_run) record_failure(trial, placement, 1, refusal_record(why));
    throw LaunchError(why);
  }
  // trial_id reads 0 when DLX_TRIAL_ID is unset, so that one is looked up again.
  if (const auto trial_id = env::lookup(env, "DLX_TRIAL_ID"); !trial.ticket && (!trial_id || trial_id->empty())) {
    throw LaunchError(fmt::format(
        "DLX_EXPERIMENT_DIR is set ({}) but neither DLX_TICKET nor DLX_TRIAL_ID, and "
        "this is no Slurm job: running would take ticket 0 of that experiment and rewrite trial 0's "
        "record (submit with sbatch --dl-experiment=FILE; to run a command outside a trial, unset "
        "DLX_EXPERIMENT_DIR; to run one trial by hand, set DLX_TRIAL_ID)",
        trial.experiment_dir->string()));
  }
}

// The experiment's data: on this node, staged before the trainer starts (trial_data.hpp), and on
// a multi-node trial rank 0 waits until every node has it (data_barrier.hpp). A failure is
// recorded by rank 0 (a failed node's reason reaches it through the barrier) and ends this rank;
// the other ranks' trainers, already waiting for rank 0, are ended through the crash signal.
std::optional<TrialData> stage_trial_data(const config::Experiment& experiment, const env::TrialEnvironment& trial,
                                          const slurm::TaskPlacement& placement, const env::EnvMap& env,
                                          const std::optional<PeerCrashSignal>& peers) {
  if (experiment.data.stage.empty()) return std::nullopt;
  const auto barrier = DataBarrier::for_run(trial, placement, env);
  const bool node_leader = placement.local_rank == 0;
  std::optional<TrialData> data;
  try {
    data = TrialData::stage(experiment.data, placement, env, node_leader ? stderr : nullptr);
    if (barrier && node_leader) barrier->arrive(placement.node_index, placement.node_name);
    if (barrier && placement.rank == 0) {
      barrier->remove_stale();
      barrier->wait_for_all(DataBarrier::deadline_from(env));
    }
  } catch (const std::exception& error) {
    std::string why = error.what();
    if (dynamic_cast<const LaunchError*>(&error) == nullptr) {  // this node's own staging
      why = fmt::format("cannot stage the experiment's data on {}: {}", placement.node_name, why);
      if (barrier && node_leader) barrier->fail(placement.node_index, placement.node_name, why);
    }
    if (placement.rank == 0) {
      record_failure(trial, placement, 1, refusal_record(why));
      if (peers) peers->announce(fmt::format("rank 0 on {}: {}", placement.node_name, why));
    }
    throw LaunchError(why);
  }
  return data;
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
  const auto placement = slurm::read_task_placement(env, host_name());
  auto trial = env::read_trial_environment(env);
  refuse_unlaunched_trial(placement, trial, env, options.dry_run);
  EnvVars vars = compute_launch_env(placement, env, resolve);
  std::error_code no_exe;
  const auto launcher = std::filesystem::read_symlink("/proc/self/exe", no_exe);
  if (const auto package = no_exe ? std::nullopt : python_package_dir(launcher)) {
    vars.emplace_back("PYTHONPATH", python_path_with(*package, env));
  }

  std::optional<config::Experiment> experiment;
  const bool under_srun = placement.launcher == slurm::Launcher::srun;
  const bool has_snapshot = trial.in_trial() &&
      std::filesystem::exists(*trial.experiment_dir / config::kSnapshotFileName);
  if (trial.in_trial() && (options.command.empty() || under_srun || has_snapshot)) {
    // Only the user's own experiment directory is acted on: its entrypoint runs as them.
    experiment = env::load_trusted_snapshot(*trial.experiment_dir);
    env::use_experiment_names(trial, *experiment);  // records hold the experiment's names
    if (under_srun) {
      try {
        check_allocation(placement, experiment->resources);
      } catch (const LaunchError& mismatch) {
        // The trainer never runs: rank 0 marks the trial failed, with the difference and its fix,
        // so that `dlx status` says why.
        if (placement.rank == 0) record_failure(trial, placement, 1, refusal_record(mismatch.what()));
        throw;
      }
    }
  }
  std::vector<std::string> command = options.command;
  if (command.empty()) {
    if (!experiment) {
      throw LaunchError(
          "no command to run: this is not a dlx trial (DLX_EXPERIMENT_DIR is not set) "
          "and no command was given (submit with sbatch --dl-experiment=FILE, or run "
          "dlx-launch -- COMMAND ARGS...)");
    }
    command = entrypoint_command(*experiment);
  }
  // The searcher's work for this array task (searcher_work.hpp): which trial, from where, how far.
  if (experiment && trial.in_trial() && !options.dry_run) {
    std::FILE* log = placement.rank == 0 ? stderr : nullptr;
    auto work = take_searcher_work(*experiment, trial, env, log);
    if (!work) return 0;
    if (work->kind == searcher::Work::Kind::wait) return env::kRequeueExitCode;  // slot given back
    apply_searcher_work(*work, *experiment, trial, vars, log);
  }
  // Hooks before the trainer starts: which checkpoint it resumes from (resume_checkpoint.hpp)
  // and, for crash restarts, the failure count as this run begins (trial_outcome.hpp).
  if (trial.in_trial()) {
    const auto name = experiment ? experiment->name : env::experiment_name(*trial.experiment_dir);
    vars.emplace_back("DLX_LATEST_CHECKPOINT",
                      resume_checkpoint_value(trial, name, placement.rank == 0 ? stderr : nullptr));
  }
  const auto at_start = record_at_start(trial);
  std::optional<int> max_restarts;
  if (experiment && !trial.slurm_job_id.empty()) max_restarts = experiment->max_restarts;

  if (options.dry_run) {
    print_dry_run(out, placement, vars, env, command);
    return 0;
  }

  // The trainer runs the code as submitted: in a node-local copy of the experiment's code
  // snapshot (code_workdir.hpp), where relative entrypoints resolve.
  const auto code = [&]() -> std::optional<CodeWorkdir> {
    if (!experiment || !trial.in_trial()) return std::nullopt;
    try {
      std::filesystem::path local_root;
      try {
        local_root = site_local_root(placement, env);
      } catch (const data::DataError& error) {
        throw LaunchError(fmt::format("the node-local directory for the code copy: {}", error.what()));
      }
      return CodeWorkdir::prepare(*trial.experiment_dir, *experiment, env, local_root,
                                  placement.rank == 0 ? stderr : nullptr);
    } catch (const LaunchError& error) {
      if (placement.rank == 0) record_failure(trial, placement, 1, refusal_record(error.what()));
      throw;
    }
  }();
  if (code) {
    vars.emplace_back("DLX_CODE_DIR", code->code_dir().string());
    vars.emplace_back("PWD", code->working_dir().string());
    if (::chdir(code->working_dir().c_str()) != 0) {
      throw LaunchError(fmt::format("cannot enter {}: {}", code->working_dir().string(),
                                    std::strerror(errno)));
    }
  }
  for (const auto& [name, value] : vars) ::setenv(name.c_str(), value.c_str(), 1);
  if (const int notice = notice_received(); notice != 0) {
    fmt::print(stderr, "dlx-launch: a notice (signal {}) arrived before the trainer started: "
               "exiting {} for a requeue\n", notice, env::kRequeueExitCode);
    return env::kRequeueExitCode;
  }
  // From here until this function returns, this rank's output (the trainer's and dlx-launch's)
  // is also copied into the trial's logs directory (trial_log.hpp), for `dlx logs`.
  const auto trial_log = start_trial_log(trial, placement, env);
  // A crash on another rank ends this one too (peer_crash.hpp): no rank is left hanging.
  const auto peers = PeerCrashSignal::for_run(trial, placement, env);
  if (peers && placement.rank == 0) peers->remove_stale();
  std::optional<std::string> peer_crash;
  std::function<bool()> end_if_peer_crashed;
  if (peers) {
    end_if_peer_crashed = [&] {
      peer_crash = peers->peer_crash();
      return peer_crash.has_value();
    };
  }
  // Held until this function returns, i.e. until the trainer has exited.
  const auto data = experiment && trial.in_trial() ? stage_trial_data(*experiment, trial, placement, env, peers)
                                                   : std::nullopt;
  if (data) {
    ::unsetenv("DLX_DATA_DIR");  // set again below only for a single dataset
    for (const auto& [name, value] : data->variables()) ::setenv(name.c_str(), value.c_str(), 1);
    if (const int notice = notice_received(); notice != 0) {
      fmt::print(stderr, "dlx-launch: a notice (signal {}) arrived while the data was staged: exiting {} for a "
                 "requeue\n", notice, env::kRequeueExitCode);
      return env::kRequeueExitCode;
    }
  }
  int status = run_child(command, end_if_peer_crashed);
  if (peer_crash) {
    fmt::print(stderr, "dlx-launch: {} crashed; this rank's trainer cannot go on without it "
               "and was ended\n", *peer_crash);
  }
  if (const int notice = notice_received(); notice != 0 && status == 128 + notice) {
    // Killed by the notice itself (it came before the trainer installed its handlers): not a
    // crash; the requeued run resumes from the last checkpoint.
    fmt::print(stderr, "dlx-launch: the trainer was ended by the notice (signal {}) before it "
               "could checkpoint: exiting {} for a requeue\n", notice, env::kRequeueExitCode);
    status = env::kRequeueExitCode;
  }
  const auto decision = decide_exit(status, at_start, max_restarts);
  // What the record and the messages call the error: this rank's, or the peer's that ended it.
  std::string what = peer_crash ? *peer_crash : describe_exit(status);
  if (decision.crash && peers && !peer_crash) {
    // First, so that the other ranks stop waiting for this one as soon as possible.
    const auto line = fmt::format("rank {} on {}: {}", placement.rank, placement.node_name, what);
    if (const auto earlier = peers->announce(line)) what += fmt::format(" (after {})", *earlier);
  }
  if (placement.rank == 0 && decision.crash) {
    record_failure(trial, placement, status, what, decision, max_restarts);
  }
  if (decision.crash && !decision.requeue && placement.rank == 0 && experiment && trial.in_trial()) {
    const auto why = fmt::format("the trainer crashed ({}){}", what,
                                 max_restarts ? fmt::format(" past max_restarts {}", *max_restarts) : "");
    fmt::print(stderr, "dlx-launch: {}: trial {} is failed\n", why, trial.trial_id);
    tell_searcher_failed(*experiment, trial, why);
  }
  if (decision.requeue) {
    fmt::print(stderr, "dlx-launch: the trainer crashed ({}): exiting {} so that Slurm requeues "
               "the trial (crash {} of max_restarts {})\n", what, decision.status,
               (at_start ? at_start->failures : 0) + 1, max_restarts.value_or(0));
  }
  return decision.status;
}

}  // namespace dlx::launch
