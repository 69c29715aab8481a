// SPDX-License-Identifier: Apache-2.0
// dlx-launch's phases (launch_state.hpp), each over the one LaunchState.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "dlx/common/accounts.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/common/signal_name.hpp"
#include "dlx/data/node_local_dir.hpp"
#include "dlx/env/notice_marker.hpp"
#include "dlx/launch/allocation_check.hpp"
#include "dlx/launch/child_process.hpp"
#include "dlx/launch/data_barrier.hpp"
#include "dlx/launch/launch_error.hpp"
#include "dlx/launch/master_port_rendezvous.hpp"
#include "dlx/launch/oom_kills.hpp"
#include "dlx/launch/resume_checkpoint.hpp"
#include "dlx/launch/searcher_work.hpp"
#include "dlx/launch/shell_entrypoint.hpp"
#include "dlx/launch/snapshot_gap.hpp"
#include "dlx/launch/system_sampler.hpp"
#include "dlx/launch/trial_log.hpp"
#include "dlx/launch/trial_outcome.hpp"
#include "dlx/launch/trial_outputs.hpp"
#include "dlx/slurm/job_time_left.hpp"
#include "dlx/store/code_snapshot.hpp"
#include "launch_state.hpp"

namespace dlx::launch {

namespace {

std::vector<std::string> entrypoint_command(const config::Experiment& experiment) {
  if (experiment.entrypoint.empty()) {
    throw LaunchError(fmt::format("experiment '{}' has no entrypoint (add "
                                  "entrypoint: to the experiment file, or run dlx-launch -- "
                                  "COMMAND)", experiment.name));
  }
  if (experiment.entrypoint_is_shell) return {"/bin/sh", "-c", experiment.entrypoint.front()};
  return experiment.entrypoint;
}

// A LaunchError's message (without the "dlx-launch: " main prints before it) as the trial record
// keeps it: saying that dlx-launch, not the trainer, stopped the trial.
std::string refusal_record(std::string_view message) { return fmt::format("dlx-launch: {}", message); }

// Best effort: the exit status reaches Slurm anyway; only the record could not say it.
void record_failure(env::TrialContext& context, const TrialCrash& crash, const ExitDecision& decision,
                    std::optional<int> max_restarts) {
  try {
    record_trainer_exit(context, crash, decision, max_restarts);
  } catch (const std::exception& error) {
    fmt::print(stderr, "dlx-launch: warning: cannot record exit {} in the trial record: {}\n",
               crash.status, error.what());
  }
}

// dlx-launch refused to run the trainer (`why`): the trial is failed at once, since running
// again would be refused the same way.
void record_refusal(env::TrialContext& context, std::string_view why) {
  const TrialCrash crash{.status = 1, .where = "", .error = refusal_record(why)};
  const ExitDecision decision{.status = 1, .crash = true, .final = ExitDecision::Final::restarts_exhausted};
  record_failure(context, crash, decision, std::nullopt);
}

// Runs `step`; a LaunchError it throws first marks the trial failed (rank 0), so that `dlx status`
// says why the trainer never ran.
template <typename Step>
auto refused_unless(LaunchState& state, Step&& step) {
  try {
    return step();
  } catch (const LaunchError& error) {
    if (state.rank0()) record_refusal(state.context, error.what());
    throw;
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
void refuse_unlaunched_trial(env::TrialContext& context, bool dry_run) {
  const auto& placement = context.placement();
  const auto& trial = context.trial();
  if (!trial.in_trial() || placement.launcher != env::Launcher::none) return;
  if (!trial.slurm_job_id.empty()) {
    const std::string why = fmt::format(
        "not started by srun: this is job {}'s batch script (or another process outside "
        "a job step), where the trial would run as one process on this node whatever its resources "
        "and would never get the preemption notice (start it with srun, as examples/job.sh does: "
        "srun --mpi=pmix dlx-launch)",
        trial.slurm_job_id);
    // The trainer never runs: mark the trial failed so that `dlx status` says so.
    if (!dry_run) record_refusal(context, why);
    throw LaunchError(why);
  }
  // trial_id reads 0 when DLX_TRIAL_ID is unset, so that one is looked up again.
  if (const auto trial_id = env::lookup(context.env(), "DLX_TRIAL_ID"); !trial.ticket && (!trial_id || trial_id->empty())) {
    throw LaunchError(fmt::format(
        "DLX_EXPERIMENT_DIR is set ({}) but neither DLX_TICKET nor DLX_TRIAL_ID, and "
        "this is no Slurm job: running would take ticket 0 of that experiment and rewrite trial 0's "
        "record (submit with sbatch --dl-experiment=FILE; to run a command outside a trial, unset "
        "DLX_EXPERIMENT_DIR; to run one trial by hand, set DLX_TRIAL_ID)",
        trial.experiment_dir->string()));
  }
}

// Outside the rendezvous (mpirun by hand) the ranks of a trial of several ranks each compute
// MASTER_PORT alone (launch_env.hpp), so it cannot move when taken; rank 0 says so before the
// trainer's bind fails less clearly. Its other ranks may still reach whatever holds the port,
// which is why the message names the fix.
void warn_if_master_port_taken(const LaunchState& state, const EnvVars& vars) {
  const auto& placement = state.placement();
  if (placement.world_size <= 1 || !state.rank0()) return;
  const auto found = std::find_if(vars.begin(), vars.end(), [](const auto& var) { return var.first == "MASTER_PORT"; });
  if (found == vars.end() || port_is_free(std::stoi(found->second))) return;
  fmt::print(stderr,
             "dlx-launch: warning: MASTER_PORT {} is already in use on {} (by another job whose id is "
             "this one's modulo 10000?): rank 0's init_process_group() cannot listen on it; set a free port "
             "below 32768 in the job script (export MASTER_PORT=...) and resubmit\n",
             found->second, placement.node_name.empty() ? std::string("this node") : placement.node_name);
}

// The torchrun variables, and PYTHONPATH with dlx's Python package and, before it, its
// compatibility layers (python/dlx/compat: `import determined` finds Determined's APIs on dlx)
// unless DLX_DETERMINED_COMPAT=0 leaves an installed Determined in charge.
//
// PYTHONUNBUFFERED=1 unless the job set it (to anything, "" included: Python then buffers): the
// trainer's stdout is a pipe, into which Python writes 8 KiB blocks, so a script's prints reached
// the job's output file and the trial's logs minutes late, and the last block of every attempt
// that Slurm ended with SIGKILL (a requeue's KillWait, a time limit) was lost, leaving no line of
// what it had printed. Unbuffered, each print is a write of its own (microseconds: bench/).
EnvVars trainer_variables(const LaunchState& state, const Resolver& resolve) {
  const auto& env = state.context.env();
  EnvVars vars = compute_launch_env(state.placement(), env, resolve, port_is_free);
  if (!env::lookup(env, "PYTHONUNBUFFERED")) vars.emplace_back("PYTHONUNBUFFERED", "1");
  std::error_code no_exe;
  const auto launcher = std::filesystem::read_symlink("/proc/self/exe", no_exe);
  if (const auto package = no_exe ? std::nullopt : python_package_dir(launcher)) {
    std::string path = python_path_with(*package, env);
    const auto compat = *package / "dlx" / "compat";
    std::error_code absent;
    if (env::lookup(env, "DLX_DETERMINED_COMPAT").value_or("1") != "0" &&
        std::filesystem::is_directory(compat / "determined", absent)) {
      path = python_path_with(compat, env::EnvMap{{"PYTHONPATH", path}});
    }
    vars.emplace_back("PYTHONPATH", path);
  }
  return vars;
}

// In a trial, the frozen experiment: only the user's own experiment directory is acted on (the
// context reads the snapshot through the trusted path), since its entrypoint runs as them.
// Running the entrypoint or checking a step needs the snapshot; a command given by hand outside
// srun uses it when it is there. Under srun, the step must match its resources.
void load_experiment(LaunchState& state) {
  if (!state.in_trial()) return;
  const bool under_srun = state.placement().launcher == env::Launcher::srun;
  state.experiment = state.options.command.empty() || under_srun ? &state.context.frozen_experiment()
                                                                  : state.context.experiment();
  if (state.experiment && under_srun) {
    refused_unless(state, [&] { check_allocation(state.placement(), state.experiment->resources); });
  }
  // GPUs shared through Slurm's shards: the trial's share of its GPU is the shards Slurm gave it
  // (SLURM_SHARDS_ON_NODE) over the GPU's; dlx.torch caps torch's allocator there.
  if (state.experiment && config::shares_gpus_by_shards(state.experiment->resources)) {
    const auto& resources = state.experiment->resources;
    const auto given = env::lookup_int(state.context.env(), "SLURM_SHARDS_ON_NODE");
    const int shards = given && *given > 0 ? static_cast<int>(*given) : config::shards_per_trial(resources);
    state.vars.emplace_back("DLX_GPU_MEMORY_FRACTION",
                            fmt::format("{:.6g}", std::min(1.0, static_cast<double>(shards) / *resources.shards_per_gpu)));
  }
}

std::vector<std::string> command_to_run(const LaunchState& state) {
  if (!state.options.command.empty()) return state.options.command;
  if (!state.experiment) {
    throw LaunchError(
        "no command to run: this is not a dlx trial (DLX_EXPERIMENT_DIR is not set) "
        "and no command was given (submit with sbatch --dl-experiment=FILE, or run "
        "dlx-launch -- COMMAND ARGS...)");
  }
  return entrypoint_command(*state.experiment);
}

// A preemption notice that came before the trainer started: nothing to checkpoint yet, so exit
// for a requeue at once.
std::optional<int> requeue_on_notice(std::string_view when) {
  const int notice = notice_received();
  if (notice == 0) return std::nullopt;
  fmt::print(stderr, "dlx-launch: a notice (signal {}) arrived {}: exiting {} for a requeue\n", notice, when,
             env::kRequeueExitCode);
  return env::kRequeueExitCode;
}

// The job's end time as of now, for the trainer's rank 0 (the one that records why a run stopped:
// notice_cause.hpp) to fall back on when squeue is silent at a notice, as it can be while
// slurmctld requeues a whole array. One bounded query per trial start, from rank 0 only.
void export_job_end_time(LaunchState& state) {
  const auto& trial = state.context.trial();
  if (trial.slurm_job_id.empty() || !trial.in_trial() || state.placement().rank != 0 || state.options.dry_run) return;
  if (env::lookup(state.context.env(), "SLURM_JOB_END_TIME")) return;  // Slurm gives it (newer releases)
  const auto value = slurm::end_time_value(slurm::ask_time_left(trial.slurm_job_id, std::chrono::milliseconds(2000)),
                                           std::time(nullptr));
  if (!value.empty()) state.vars.emplace_back("DLX_JOB_END_TIME", value);
}

// The trainer runs the code as submitted: in a node-local copy of the experiment's code snapshot
// (code_workdir.hpp), where relative entrypoints resolve.
std::optional<CodeWorkdir> code_copy(LaunchState& state) {
  if (!state.experiment || !state.in_trial()) return std::nullopt;
  std::filesystem::path local_root;
  try {
    local_root = site_local_root(state.local);
  } catch (const data::DataError& error) {
    throw LaunchError(fmt::format("the node-local directory for the code copy: {}", error.what()));
  }
  // Whichever rank of the first node makes the copy says so (and what it restored): one line a
  // trial, where rank 0's alone was silent whenever another rank of its node copied first.
  std::FILE* first_node_log = state.placement().node_index == 0 ? stderr : nullptr;
  return CodeWorkdir::prepare(*state.context.trial().experiment_dir, *state.experiment, state.context.env(),
                              state.context.trial().trial_id, local_root, first_node_log);
}

// While a rank waits before its trainer starts (rank 0 for the data of every node, the others for
// rank 0's MASTER_PORT): whether to stop, because a notice came or another rank announced a crash
// or a refusal (then kept in state.peer_crash).
bool stop_waiting(LaunchState& state) {
  if (notice_received() != 0) return true;
  if (state.peers) state.peer_crash = state.peers->peer_crash();
  return state.peer_crash.has_value();
}

// The experiment's data: on this node, staged before the trainer starts (trial_data.hpp), and on
// a multi-node trial rank 0 waits until every node has it (data_barrier.hpp), or until another
// rank stops the trial first (a notice, a peer's crash: state.peer_crash). A failure ends this
// rank (a failed node's reason reaches rank 0 through the barrier); refuse_trial_before_trainer
// records it and tells the other ranks.
std::optional<TrialData> stage_trial_data(LaunchState& state) {
  const auto& placement = state.placement();
  const auto& env = state.context.env();
  if (state.experiment->data.stage.empty()) return std::nullopt;
  const auto barrier = DataBarrier::for_run(state.context.trial(), placement, env);
  const bool node_leader = placement.local_rank == 0;
  std::optional<TrialData> data;
  try {
    data = TrialData::stage(state.experiment->data, state.local, node_leader ? stderr : nullptr);
    if (barrier && node_leader) barrier->arrive(placement.node_index, placement.node_name);
    if (barrier && placement.rank == 0) {
      barrier->remove_stale();
      barrier->wait_for_all(DataBarrier::deadline_from(env), [&state] { return stop_waiting(state); });
    }
  } catch (const std::exception& error) {
    std::string why = error.what();
    if (dynamic_cast<const LaunchError*>(&error) == nullptr) {  // this node's own staging
      why = fmt::format("cannot stage the experiment's data on {}: {}", placement.node_name, why);
      if (barrier && node_leader) barrier->fail(placement.node_index, placement.node_name, why);
    }
    throw LaunchError(why);
  }
  return data;
}

// <node-local root>/dlx-<uid>/containers/<name>: the runtime's private directory for this run,
// opened as the code copy's scratch directory is (node_local_dir.hpp), never through a link.
std::filesystem::path container_state_dir(LaunchState& state, const std::string& name) {
  try {
    const auto scratch = data::open_node_local_dir(site_local_root(state.local), /*create=*/true,
                                                   data::NodeLocalUse::code_copy);
    const auto containers_path = scratch->path / "containers";
    const auto containers = data::open_private_directory_at(scratch->fd.get(), "containers", true, containers_path,
                                                            data::NodeLocalUse::code_copy);
    const auto path = containers_path / name;
    const auto run = data::open_private_directory_at(containers.get(), name, true, path, data::NodeLocalUse::code_copy);
    data::prove_same_directory(path, run.get());
    return path;
  } catch (const data::DataError& error) {
    throw LaunchError(fmt::format("the node-local directory for the container's state: {}", error.what()));
  }
}

// trials/<id>/container.json: the image this attempt runs, by digest where it has one, for
// `dlx status` (a result names the exact image). Rewritten by every attempt; rank 0's.
void record_container(const std::filesystem::path& trial_dir, const TrialContainer& container) {
  const auto& run = container.run();
  const nlohmann::json info{{"image", container.image_text()},
                            {"kind", container::to_string(container.source_kind())},
                            {"runtime", container.runtime_name()},
                            {"digest", container.digest()},
                            {"unix_time", std::time(nullptr)},
                            {"node_image", run.image.text}};
  write_file_durably(trial_dir / "container.json", info.dump(2) + "\n", 0640);
}

}  // namespace

void enter_container(LaunchState& state) {
  if (!state.experiment || !state.in_trial() || !state.experiment->container.image_for(
          state.experiment->resources.gpus_per_node.value_or(0) > 0)) {
    return;
  }
  const auto& trial = state.context.trial();
  const auto& placement = state.placement();
  try {
    TrialContainer::Inputs inputs;
    inputs.experiment = state.experiment;
    inputs.env = env::current_environment();
    std::error_code no_cwd;
    inputs.workdir = state.code ? state.code->working_dir() : std::filesystem::current_path(no_cwd);
    inputs.shared_dirs.push_back(*trial.experiment_dir);
    if (trial.checkpoint_dir) inputs.shared_dirs.push_back(*trial.checkpoint_dir);
    if (state.data) {
      for (const auto& dataset : state.data->staged().datasets()) inputs.data_dirs.push_back(dataset.dir);
    }
    std::error_code no_exe;
    const auto launcher = std::filesystem::read_symlink("/proc/self/exe", no_exe);
    if (!no_exe) {
      inputs.python_package = any_python_package_dir(launcher);
      inputs.library = dlx_library_file(launcher);
    }
    inputs.determined_compat = env::lookup(state.context.env(), "DLX_DETERMINED_COMPAT").value_or("1") != "0";
    const auto job = trial.slurm_job_id.empty() ? std::to_string(::getpid()) : trial.slurm_job_id;
    inputs.name = fmt::format("dlx-{}-r{}", job, placement.rank);
    inputs.state_dir = container_state_dir(state, inputs.name);
    const auto& settings = state.experiment->container;
    inputs.image_cache_dir = settings.image_cache
                                 ? std::filesystem::path(*settings.image_cache) / account_name(::getuid())
                                 : trial.experiment_dir->parent_path() / ".images";
    inputs.local_root = site_local_root(state.local);
    inputs.local_policy = {state.experiment->data.max_bytes, state.experiment->data.high_watermark,
                           state.experiment->data.low_watermark};
    inputs.node_name = placement.node_name;
    if (auto container = TrialContainer::prepare(std::move(inputs), state.rank0_log())) {
      state.container.emplace(std::move(*container));
      if (placement.rank == 0) record_container(trial.record_path().parent_path(), *state.container);
    }
  } catch (const std::exception& error) {
    throw LaunchError(fmt::format("cannot run the trainer in its container on {}: {}", placement.node_name,
                                  error.what()));
  }
}

namespace {

// The trial's state when the trainer finished it in this run and exited non-zero afterwards (on
// any rank: the record is rank 0's, read here only); nullopt for a crash. Not when another rank's
// crash was taken: that one ends the trial.
std::optional<std::string> finished_state_after(LaunchState& state, int status) {
  if (state.peer_crash || !state.in_trial()) return std::nullopt;
  try {
    const auto now = record::load_trial_record_if_exists(state.context.trial().record_path());
    if (finished_during_run(status, state.at_start, now)) return now->state;
  } catch (const std::exception& error) {
    fmt::print(stderr, "dlx-launch: warning: cannot read the trial record after the trainer exited: {}\n",
               error.what());
  }
  return std::nullopt;
}

// What ended this rank: another rank's crash, or rank 0's refusal of the trial.
std::string peer_stop(const TrialCrash& crash) {
  return crash.refused ? fmt::format("{} refused the trial ({})", crash.where, crash.error)
                       : fmt::format("{} crashed", crash.described());
}

// The trainer's program could not be run at all (execvp failed with `error`; the child has said
// so on stderr). Where that is the program's own fault (no such file, not executable, not a
// program) a restart runs the same command and fails alike, after waiting in the queue again: in a
// trial it is refused on every rank, as a failure before the trainer started (throws). Other
// errors (out of memory, too many processes) may pass, and stay crashes (exit 126 or 127).
[[noreturn]] void refuse_not_run(LaunchState& state, const std::string& program, std::string_view what) {
  const auto where = state.container ? fmt::format("in the image {}", state.container->image_text())
                                     : std::string("on every node");
  const auto why = fmt::format("cannot run the trainer's program '{}' on {}: {} (fix the entrypoint in "
                               "experiment.yaml, or make the program exist and be executable {}; a "
                               "restart would fail alike, so it is not restarted)",
                               program, state.placement().node_name, what, where);
  refuse_trial_before_trainer(state, why);
  throw LaunchError(why);
}

void refuse_program_not_run(LaunchState& state, const std::string& program, int error) {
  const bool the_programs_fault = error == ENOENT || error == EACCES || error == ENOEXEC || error == ENOTDIR ||
                                  error == ELOOP || error == EPERM;
  if (!the_programs_fault || !state.in_trial()) return;
  refuse_not_run(state, program, std::strerror(error));
}

// The same for an entrypoint string whose shell could not run the string's own program
// (shell_entrypoint.hpp): "/bin/sh: 1: pyhton3: not found", exit 127. Needs the trainer's last
// error line, so only where its output is kept (trial_log.hpp).
void refuse_shell_program_not_run(LaunchState& state, int status) {
  const auto& command = state.command;
  if ((status != 127 && status != 126) || !state.in_trial() || !state.trial_log) return;
  if (command.size() != 3 || command[0] != "/bin/sh" || command[1] != "-c") return;
  const auto program = shell_command_program(command[2]);
  if (!program) return;
  const auto said = last_error_line(state.trial_log->stderr_tail());
  if (shell_could_not_run(status, *program, said)) refuse_not_run(state, *program, without_added_exec(said, *program));
}

// The same for a container runtime that says it could not start the trainer's program in the
// image (Runtime::could_not_run_program): sbatch checks the program in an image it can read (a
// root file system), not in one the node pulls from a registry.
void refuse_container_program_not_run(LaunchState& state, int status) {
  if (!state.container || !state.in_trial() || !state.trial_log) return;
  const auto said = last_error_line(state.trial_log->stderr_tail());
  if (!state.container->could_not_run_program(status, said)) return;
  refuse_not_run(state, state.command.front(), said);
}

// A container runtime that could not start a container on this node at all
// (Runtime::could_not_start_container): the node's runtime setup, not a crash of the trainer,
// which never ran; restarts would meet it again (three of them, as the same crash, before), so
// the trial fails at once with the runtime's words and where to look.
void refuse_container_not_started(LaunchState& state, int status) {
  if (!state.container || !state.in_trial() || !state.trial_log) return;
  const auto said = last_error_line(state.trial_log->stderr_tail());
  if (!state.container->could_not_start_container(status, said)) return;
  const auto why = fmt::format("{} could not start the trainer's container on {} (exit {}): {} (the node's "
                               "container setup: `dlx doctor --containers` on the node, as the trial's user, "
                               "says what to change; docs/containers.md; a restart would fail alike, so it is "
                               "not restarted)",
                               state.container->runtime_name(), state.placement().node_name, status, said);
  refuse_trial_before_trainer(state, why);
  throw LaunchError(why);
}

// Rank 0 keeps the notice beside trial.h5 (notice_marker.hpp), for the next run's restart cause
// should the trainer be killed before it saves. Said, not fatal, when it cannot.
void keep_notice(const LaunchState& state, int notice, std::time_t now) {
  const auto& trial = state.context.trial();
  std::string job_end;
  if (const auto slurm_end = env::lookup(state.context.env(), "SLURM_JOB_END_TIME")) {
    job_end = *slurm_end;
  } else if (const auto ours = std::ranges::find(state.vars, std::string("DLX_JOB_END_TIME"),
                                                 [](const auto& var) { return var.first; });
             ours != state.vars.end()) {
    job_end = ours->second;
  }
  const auto trial_dir = trial.record_path().parent_path();
  try {
    env::write_notice_marker(trial_dir, {trial.slurm_job_id, trial.restarts, notice, now, job_end});
  } catch (const std::exception& error) {
    fmt::print(stderr, "dlx-launch: warning: the notice is not kept in {} ({}): if the trainer is killed before "
               "it saves, the restart's cause is unknown\n", trial_dir.string(), error.what());
  }
}

// The trainer, with the signals forwarded; ended when another rank crashed. Its exit status, the
// requeue code when the notice itself ended it.
int run_trainer(LaunchState& state) {
  // Asked about once a second while the trainer runs: another rank's crash ends it, a notice is
  // passed to a container's trainer by its runtime too, and rank 0 says when a notice came and
  // keeps it beside trial.h5. A trainer that cannot reach its next point between two batches
  // before Slurm's kill (a batch longer than the notice's lead) leaves no other trace: its log
  // ends with this line, and the next run's restart takes its cause from the kept notice.
  std::function<bool()> watch;
  if (state.peers || state.container || (state.in_trial() && state.rank0())) {
    watch = [&state, told = false, passed = false]() mutable {
      if (const int notice = notice_received(); notice != 0 && !passed && state.container) {
        // Every rank's container: its runtime's own command, beside the runtime's signal proxy.
        passed = true;
        state.container->pass_notice(notice);
      }
      if (const int notice = notice_received(); notice != 0 && !told && state.rank0() && state.in_trial()) {
        told = true;
        const auto now = std::time(nullptr);
        std::tm local{};
        ::localtime_r(&now, &local);
        fmt::print(stderr, "dlx-launch: {} at {:02}:{:02}:{:02}, a notice (a requeue, a preemption or the time limit), "
                   "passed on to the trainer: a dlx trainer saves at its next point between two batches and exits "
                   "{}, if it gets there before Slurm kills the step (docs/fault-tolerance.md)\n",
                   signal_name(notice), local.tm_hour, local.tm_min, local.tm_sec, env::kRequeueExitCode);
        keep_notice(state, notice, now);
      }
      if (!state.peers) return false;
      state.peer_crash = state.peers->peer_crash();
      return state.peer_crash.has_value();
    };
  }
  // What the trainer uses of the node, sampled from its start to its exit (system_sampler.hpp).
  std::unique_ptr<SystemSampler> sampler;
  std::function<void(pid_t)> start_sampler;
  const auto& trial = state.context.trial();
  if (state.experiment && trial.in_trial() && state.experiment->resources.sample_period_s > 0) {
    start_sampler = [&](pid_t trainer) {
      const record::SystemLogName name{state.placement().node_name, state.placement().rank,
                                       state.at_start ? state.at_start->restarts : 0};
      const auto period = std::chrono::milliseconds(
          static_cast<std::int64_t>(state.experiment->resources.sample_period_s * 1000));
      const SamplerGpus gpus{state.placement().gpus, state.experiment->resources.gpus_per_node.value_or(0) > 0};
      sampler = SystemSampler::start(trainer, period, trial.record_path().parent_path(), name, stderr, gpus);
    };
  }
  const auto trainer = trainer_shell_command(state.command);
  const auto command = state.container ? state.container->command_for(trainer) : trainer;
  state.master_port_hold.reset();  // the trainer's TCPStore binds it now (port_reservation.hpp)
  int exec_error = 0;
  const auto oom = OomKills::of_this_process();  // its count was readable just now
  const std::uint64_t kills_before = oom ? oom->count().value_or(0) : 0;
  int status = run_child(command, watch, start_sampler, &exec_error);
  if (state.container && !state.peer_crash && exec_error == 0) {
    // Podman's client exits 0 at a SIGTERM while the container's trainer still saves: the
    // trainer's own exit is the trial's.
    if (const auto container_status = state.container->outliving_container_status();
        container_status && *container_status != status) {
      fmt::print(stderr, "dlx-launch: {} exited {} before the trainer in its container, which exited {}: the "
                 "trainer's exit counts\n", state.container->runtime_name(), status, *container_status);
      status = *container_status;
    }
  }
  sampler.reset();  // its last sample, once the trainer has exited
  if (const std::uint64_t kills = oom ? oom->count().value_or(0) : 0; status != 0 && kills > kills_before) {
    state.oom_cause = oom_cause(kills - kills_before, oom->limit_bytes());
  }
  if (exec_error != 0 && !state.peer_crash) refuse_program_not_run(state, command.front(), exec_error);
  if (exec_error == 0 && !state.peer_crash) refuse_shell_program_not_run(state, status);
  if (exec_error == 0 && !state.peer_crash) refuse_container_program_not_run(state, status);
  if (exec_error == 0 && !state.peer_crash) refuse_container_not_started(state, status);
  if (state.peer_crash) {
    fmt::print(stderr, "dlx-launch: {}; this rank's trainer cannot go on without it and was ended\n",
               peer_stop(*state.peer_crash));
  }
  if (const int notice = notice_received(); notice != 0 && status == 128 + notice) {
    // The notice came after the trainer had finished its trial (its handlers restored as it
    // ended): nothing is left to resume, and a requeue would only run a trial that is done.
    if (const auto finished = finished_state_after(state, status)) {
      fmt::print(stderr, "dlx-launch: the notice (signal {}) ended the trainer after its trial was {}: nothing to "
                 "resume, exiting 0\n", notice, *finished);
      return 0;
    }
    // Killed by the notice itself (it came before the trainer installed its handlers): not a
    // crash; the requeued run resumes from the last checkpoint.
    fmt::print(stderr, "dlx-launch: the trainer was ended by the notice (signal {}) before it "
               "could checkpoint: exiting {} for a requeue\n", notice, env::kRequeueExitCode);
    return env::kRequeueExitCode;
  }
  return status;
}

// The crash every rank takes as the trial's (peer_crash.hpp): the one that ended this rank, or
// this rank's own, announced to the others first (so that they stop waiting for it as soon as
// possible); when another rank announced before, that one.
std::string rank_where(const LaunchState& state) {
  return state.peers ? fmt::format("rank {} on {}", state.placement().rank, state.placement().node_name) : "";
}

TrialCrash trial_crash(LaunchState& state, int status) {
  if (state.peer_crash) return *state.peer_crash;
  const auto tail = state.trial_log ? state.trial_log->stderr_tail() : std::string();
  const auto last_line = last_error_line(tail);
  TrialCrash own{.status = status, .where = rank_where(state), .error = crash_error(status, last_line, state.oom_cause)};
  if (state.code && status != 128 + SIGKILL) {
    own.snapshot_gap = snapshot_gap(last_line, state.code->origin(), state.code->code_dir(), state.command).value_or("");
  }
  if (!state.peers) return own;
  const auto earlier = state.peers->announce(own);
  if (!earlier) return own;
  fmt::print(stderr, "dlx-launch: this rank's trainer crashed ({}) after {} crashed: the trial takes that crash\n",
             own.error, earlier->described());
  return *earlier;
}

// A crash: rank 0's record updated and, when it is final, the searcher told that the trial failed.
void account_for_crash(LaunchState& state, const TrialCrash& crash, const ExitDecision& decision) {
  if (state.rank0()) record_failure(state.context, crash, decision, state.max_restarts);
  if (decision.requeue) {
    // This rank's own crash by its error alone; another rank's with where it was.
    const bool own = crash.where == rank_where(state);
    fmt::print(stderr, "dlx-launch: the trainer crashed ({}): exiting {} so that Slurm requeues "
               "the trial (crash {} of max_restarts {})\n", own ? crash.error : crash.described(), decision.status,
               (state.at_start ? state.at_start->failures : 0) + 1, state.max_restarts.value_or(0));
    return;
  }
  if (!state.rank0() || !state.experiment || !state.in_trial()) return;
  const auto failures = (state.at_start ? state.at_start->failures : 0) + 1;
  const auto why = crash_stop_reason(crash, decision, failures, state.max_restarts);
  fmt::print(stderr, "dlx-launch: trial {} is {}\n", state.context.trial().trial_id, why);
  tell_searcher_failed(*state.experiment, state.context.trial(), why.substr(why.find(' ') + 1));
}

// MASTER_PORT as the trainer gets it: in the variables and in this process's environment (the
// trainer's, and a container's, come from there).
void set_master_port(LaunchState& state, int port) {
  const auto text = std::to_string(port);
  for (auto& [name, value] : state.vars) {
    if (name == "MASTER_PORT") value = text;
  }
  ::setenv("MASTER_PORT", text.c_str(), 1);
}

// Rank 0 of a trial of several ranks: its port chosen, held and told to the other ranks. A port
// other than the job's own is said in the trial's log (whoever holds the job's port may be worth
// knowing about).
void choose_master_port(LaunchState& state, const MasterPortRendezvous& rendezvous) {
  const auto& placement = state.placement();
  const auto candidates = master_port_candidates(placement.job_id, 0);
  state.master_port_hold = reserve_first_free(candidates);
  const int port = state.master_port_hold ? state.master_port_hold->port() : candidates.front();
  if (port != candidates.front()) {
    const bool in_range = std::find(candidates.begin(), candidates.end(), port) != candidates.end();
    if (in_range) {
      fmt::print(stderr, "dlx-launch: MASTER_PORT {}: {} is in use on {}\n", port, candidates.front(), placement.node_name);
    } else {
      fmt::print(stderr, "dlx-launch: MASTER_PORT {}: the trial's {} ports from {} are all in use on {}; the kernel "
                 "chose this one\n", port, candidates.size(), candidates.front(), placement.node_name);
    }
  }
  rendezvous.remove_stale();
  rendezvous.publish(port);  // a failure is the trial's: refuse_trial_before_trainer
  set_master_port(state, port);
}

// Another rank crashed (or rank 0 refused the trial) before this rank's trainer started: this
// rank exits as every rank of the trial does for that crash (peer_crash.hpp).
int exit_for_peer_crash(LaunchState& state) {
  const auto& crash = *state.peer_crash;
  fmt::print(stderr, "dlx-launch: {} before this rank's trainer started; it is not started\n", peer_stop(crash));
  const auto decision = decide_exit(crash, state.at_start, state.max_restarts);
  account_for_crash(state, crash, decision);
  return decision.status;
}

// Any other rank: the port rank 0 published. Giving up is this rank's crash, told to the others
// so that rank 0's trainer, if it started after all, does not wait for this rank in vain.
std::optional<int> wait_for_master_port(LaunchState& state, const MasterPortRendezvous& rendezvous) {
  const auto& env = state.context.env();
  const bool stages = state.experiment && !state.experiment->data.stage.empty();
  std::optional<int> port;
  try {
    const auto deadline = MasterPortRendezvous::deadline_from(
        env, stages ? DataBarrier::deadline_from(env) : std::chrono::milliseconds::zero());
    port = rendezvous.wait(deadline, [&state] { return stop_waiting(state); });
  } catch (const std::exception& error) {  // the deadline, a bad file, a bad DLX_MASTER_PORT_WAIT_S
    if (state.peers) state.peers->announce({.status = 1, .where = rank_where(state), .error = error.what()});
    throw;
  }
  if (state.peer_crash) return exit_for_peer_crash(state);
  if (!port) return requeue_on_notice("while rank 0 chose MASTER_PORT");
  set_master_port(state, *port);
  return std::nullopt;
}

// The searcher had no work for this rank's ticket. When its trial ended in this very run (another
// rank refused it, or crashed past max_restarts, and rank 0 told the searcher before this rank
// asked: the crash is announced before the searcher is told, peer_crash.hpp), this rank exits as
// every rank of the run does, so that the step fails as the trial did; a 0 here would read as a
// task with nothing to do. Otherwise (a requeued task whose trial ended meanwhile, a ticket beyond
// the search) there is nothing to do: exit 0.
int exit_without_work(LaunchState& state, const searcher::Work& none) {
  if (none.trial < 0) return 0;
  auto trial = state.context.trial();
  trial.trial_id = none.trial;
  const auto peers = PeerCrashSignal::for_run(trial, state.placement(), state.context.env());
  const auto crash = peers ? peers->peer_crash() : std::nullopt;
  if (!crash) {
    // Rank 0 has said so (take_searcher_work); another rank whose trial ended says it too.
    if (!state.rank0()) fmt::print(stderr, "dlx-launch: {}: this rank has no work\n", none.reason);
    return 0;
  }
  // The trial is failed for good (the searcher counts it so): a refusal exits 1 on every rank, a
  // final crash passes its status through (trial_outcome.hpp), never 85.
  const int status = crash->refused ? decide_exit(*crash, std::nullopt, std::nullopt).status : crash->status;
  fmt::print(stderr, "dlx-launch: {} before this rank took its work: trial {} is failed; exiting {} as every rank of "
             "the trial does\n", peer_stop(*crash), none.trial, status);
  return status;
}

}  // namespace

LaunchState::LaunchState(const Options& given, env::TrialContext trial_context)
    : options(given), context(std::move(trial_context)),
      local(local_root_context(context.placement(), context.env())) {}

void prepare(LaunchState& state, const Resolver& resolve) {
  refuse_unlaunched_trial(state.context, state.options.dry_run);
  state.vars = trainer_variables(state, resolve);
  load_experiment(state);
  state.command = command_to_run(state);
}

std::optional<int> take_work(LaunchState& state) {
  auto& trial = state.context.trial();
  // The searcher's work for this array task (searcher_work.hpp): which trial, from where, how far.
  if (state.experiment && trial.in_trial() && !state.options.dry_run) {
    const auto work = take_searcher_work(*state.experiment, trial, state.context.env(), state.rank0_log(),
                                         state.rank0());
    if (work.kind == searcher::Work::Kind::none) return exit_without_work(state, work);
    if (work.kind == searcher::Work::Kind::wait) {
      state.gave_slot_back = true;
      return env::kRequeueExitCode;
    }
    apply_searcher_work(work, *state.experiment, trial, state.vars, state.rank0_log());
  }
  // Which checkpoint the trainer resumes from (resume_checkpoint.hpp) and, for crash restarts,
  // the failure count as this run begins (trial_outcome.hpp).
  if (trial.in_trial()) {
    state.vars.emplace_back("DLX_LATEST_CHECKPOINT",
                            resume_checkpoint_value(trial, state.context.experiment_name(), state.rank0_log()));
  }
  state.at_start = record_at_start(trial);
  if (state.experiment && !trial.slurm_job_id.empty()) state.max_restarts = state.experiment->max_restarts;
  export_job_end_time(state);
  return std::nullopt;
}

void print_dry_run(std::FILE* out, const LaunchState& state) {
  const auto& placement = state.placement();
  fmt::print(out, "# dlx-launch: {} environment, node {}, rank {} of {}\n",
             env::to_string(placement.launcher), placement.node_name, placement.rank,
             placement.world_size);
  for (const auto& [name, value] : state.vars) fmt::print(out, "{}={}\n", name, value);
  for (const auto& [name, value] : state.context.env()) {
    const bool computed = std::any_of(state.vars.begin(), state.vars.end(),
                                      [&](const auto& var) { return var.first == name; });
    if (name.starts_with("DLX_") && !computed) fmt::print(out, "{}={}\n", name, value);
  }
  fmt::print(out, "# command: {}\n", fmt::join(state.command, " "));
}

std::optional<int> enter_code(LaunchState& state) {
  // From here until dlx-launch exits, this rank's output (the trainer's and dlx-launch's: the code
  // copy's, the data staging's, the error that ends it) is also copied into the trial's logs
  // directory (trial_log.hpp), for `dlx logs`.
  state.trial_log = start_trial_log(state.context.trial(), state.placement(), state.context.env());
  // From here a failure on any rank reaches the others (refuse_trial_before_trainer), a crash on
  // another rank ends this one (peer_crash.hpp): no rank is left waiting for one that stopped.
  if (auto peers = PeerCrashSignal::for_run(state.context.trial(), state.placement(), state.context.env())) {
    state.peers.emplace(std::move(*peers));
    if (state.rank0()) state.peers->remove_stale();
  }
  if (auto code = code_copy(state)) {
    state.code.emplace(std::move(*code));
    state.vars.emplace_back("DLX_CODE_DIR", state.code->code_dir().string());
    state.vars.emplace_back("PWD", state.code->working_dir().string());
    state.code->enter();  // through the handle the directory was checked with
  }
  for (const auto& [name, value] : state.vars) ::setenv(name.c_str(), value.c_str(), 1);
  return requeue_on_notice("before the trainer started");
}

std::optional<int> stage_data(LaunchState& state) {
  if (!state.experiment || !state.in_trial()) return std::nullopt;
  // Held until dlx-launch exits, i.e. until the trainer has exited.
  state.data = stage_trial_data(state);
  if (state.peer_crash) return exit_for_peer_crash(state);
  if (!state.data) return std::nullopt;
  ::unsetenv("DLX_DATA_DIR");  // set again below only for a single dataset
  for (const auto& [name, value] : state.data->variables()) ::setenv(name.c_str(), value.c_str(), 1);
  return requeue_on_notice("while the data was staged");
}

std::optional<int> settle_master_port(LaunchState& state) {
  const auto& env = state.context.env();
  const auto& placement = state.placement();
  if (const auto given = env::lookup(env, "MASTER_PORT"); given && !given->empty()) return std::nullopt;
  if (placement.world_size <= 1) {
    state.master_port_hold = reserve_first_free(master_port_candidates(placement.job_id, packed_slot_of(env)));
    if (state.master_port_hold) set_master_port(state, state.master_port_hold->port());
    return std::nullopt;
  }
  const auto rendezvous = MasterPortRendezvous::for_run(state.context.trial(), placement, env);
  if (!rendezvous) {
    warn_if_master_port_taken(state, state.vars);
    return std::nullopt;
  }
  if (!state.rank0()) return wait_for_master_port(state, *rendezvous);
  choose_master_port(state, *rendezvous);
  return std::nullopt;
}

namespace {

// A trainer that exits 0 without finishing its trial leaves trial.h5 saying running, and
// `dlx status` then shows the trial lost; one that never opened its trial (a script without the
// SDK) leaves no trial.h5, and `dlx status` shows it not started. Said in the trial's log, where
// its user looks first.
void warn_if_unfinished(LaunchState& state) {
  if (state.peer_crash || !state.in_trial() || !state.rank0()) return;
  try {
    const auto now = record::load_trial_record_if_exists(state.context.trial().record_path());
    if (!now) {
      fmt::print(stderr,
                 "dlx-launch: warning: the trainer exited 0 without opening trial {} through the dlx SDK: it "
                 "reported no metrics and saved no checkpoints, and `dlx status` will show the trial not "
                 "started. Open it with dlx.Trial() in Python (or dlx.torch.Loop, or Determined's API), "
                 "dlx::Trial in C++; docs/sdk.md\n",
                 state.context.trial().trial_id);
      return;
    }
    if (now->state != "running") return;
    fmt::print(stderr,
               "dlx-launch: warning: the trainer exited 0 without finishing trial {}: its record stays "
               "running, and `dlx status` will show it lost. End training with trial.finish() in Python "
               "(dlx.torch.Loop calls it when `for epoch in loop.epochs()` runs to its end: end training early "
               "with loop.stop(), not a break; Determined's API calls it for you) or Trial::finish() in C++\n",
               state.context.trial().trial_id);
  } catch (const std::exception& error) {
    fmt::print(stderr, "dlx-launch: warning: cannot read the trial record after the trainer exited: {}\n",
               error.what());
  }
}

}  // namespace

void refuse_trial_before_trainer(LaunchState& state, std::string_view why) {
  if (!state.in_trial() || state.options.dry_run) return;
  // Announced first: a rank that asks the searcher for its ticket's work once the trial is failed
  // finds it, and fails with the others instead of exiting 0 (exit_without_work).
  if (state.peers) {
    state.peers->announce({.status = 1, .where = rank_where(state), .error = std::string(why), .refused = true});
  }
  if (state.rank0()) {
    record_refusal(state.context, why);
    // The searcher counts the trial failed: a PBT round, an ASHA rung would otherwise wait for it
    // (another rank's refusal reaches it through rank 0's account_for_crash).
    if (state.experiment) tell_searcher_failed(*state.experiment, state.context.trial(), std::string(why));
  }
}

int run_and_account(LaunchState& state) {
  const int status = run_trainer(state);
  if (status == 0) warn_if_unfinished(state);
  if (!should_mark_failed(status, state.at_start)) return status;
  if (auto finished = finished_state_after(state, status)) {
    const auto tail = state.trial_log ? state.trial_log->stderr_tail() : std::string();
    fmt::print(stderr, "{}\n", exit_after_finish_warning(status, *finished, last_error_line(tail)));
    return 0;
  }
  const auto crash = trial_crash(state, status);
  const auto decision = decide_exit(crash, state.at_start, state.max_restarts);
  account_for_crash(state, crash, decision);
  return decision.status;
}

void keep_outputs(LaunchState& state) {
  if (!state.code || !state.experiment || !state.in_trial() || !state.code->node_local()) return;
  try {
    if (!state.code->alone_in_copy()) return;  // another rank of this node is still in the copy
    const auto max_bytes = state.experiment->code.keep_outputs;
    if (max_bytes == 0) return;
    const auto& trial = state.context.trial();
    const std::filesystem::path outputs = trial.record_path().parent_path() / "outputs";
    const auto found = find_trainer_files(state.code->copy_view(), *trial.experiment_dir / store::kCodeDirName,
                                          state.code->copied_at(), outputs);
    if (state.placement().node_index != 0) {
      const auto& node = state.placement();
      print_unkept_node_files(stderr, found,
                              fmt::format("node {}{}", node.node_index,
                                          node.node_name.empty() ? "" : fmt::format(" ({})", node.node_name)),
                              outputs);
      return;
    }
    if (found.files.empty() && found.special.empty()) return;
    // The step is being ended once a notice came (a requeue, a preemption, the time limit):
    // copying goes on for kNoticeCopyBudget from then, within Slurm's KillWait.
    constexpr auto kNoticeCopyBudget = std::chrono::seconds(10);
    std::optional<std::chrono::steady_clock::time_point> noticed;
    const auto out_of_time = [&] {
      if (notice_received() == 0) return false;
      const auto now = std::chrono::steady_clock::now();
      if (!noticed) noticed = now;
      return now - *noticed > kNoticeCopyBudget;
    };
    print_kept_outputs(stderr, keep_trainer_files(state.code->copy_view(), found, outputs, max_bytes, out_of_time),
                       outputs);
  } catch (const std::exception& error) {
    fmt::print(stderr, "dlx-launch: warning: cannot keep the files the trainer wrote in its working directory: {}\n",
               error.what());
  }
}

}  // namespace dlx::launch
