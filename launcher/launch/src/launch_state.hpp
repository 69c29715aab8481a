// SPDX-License-Identifier: Apache-2.0
#pragma once
// dlx-launch's run as named phases over one state (launch.hpp lists the steps; launch.cpp runs
// them in order). Each phase reads what the earlier ones left in LaunchState and adds its own
// part; a phase that ends the run early returns the exit status.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlx/record/trial_record.hpp"
#include "dlx/config/experiment.hpp"
#include "dlx/data/stage.hpp"
#include "dlx/env/trial_context.hpp"
#include "dlx/launch/code_workdir.hpp"
#include "dlx/launch/launch_env.hpp"
#include "dlx/launch/options.hpp"
#include "dlx/launch/output_tee.hpp"
#include "dlx/launch/peer_crash.hpp"
#include "dlx/launch/port_reservation.hpp"
#include "dlx/launch/trial_container.hpp"
#include "dlx/launch/trial_data.hpp"
#include "dlx/launch/trial_outcome.hpp"

namespace dlx::launch {

// What dlx-launch knows as it goes. The members that hold something while the trainer runs are
// declared in the order the phases take them, so that they are let go in reverse once it has
// exited: the staged data's shared locks, the copy of the output, the code copy, the crash signal.
struct LaunchState {
  LaunchState(const Options& given, env::TrialContext trial_context);

  bool in_trial() const noexcept { return context.in_trial(); }
  const env::TaskPlacement& placement() const noexcept { return context.placement(); }
  // Rank 0 speaks for the trial: its messages, its records.
  bool rank0() const noexcept { return placement().rank == 0; }
  std::FILE* rank0_log() const noexcept { return rank0() ? stderr : nullptr; }

  const Options& options;
  env::TrialContext context;                       // environment, contract, placement, snapshot
  data::LocalRootContext local;                    // what decides the node-local directories
  const config::Experiment* experiment = nullptr;  // the frozen one (the context's), in a trial
  EnvVars vars;                                    // what the trainer gets on top of env
  std::vector<std::string> command;
  std::optional<record::TrialRecord> at_start;  // the record as this run starts
  std::optional<int> max_restarts;                  // crashes are restarted: a Slurm job with a snapshot
  bool gave_slot_back = false;  // take_work: a waiting ticket gives its place back (exit 85)

  std::optional<PeerCrashSignal> peers;
  std::optional<TrialCrash> peer_crash;  // the crash on another rank that ended this one
  std::string oom_cause;  // the kernel's OOM kills while the trainer ran (oom_kills.hpp), "" for none
  std::optional<CodeWorkdir> code;
  std::unique_ptr<StdioThroughTee> trial_log;
  std::optional<TrialData> data;
  std::optional<PortReservation> master_port_hold;  // MASTER_PORT, held until the trainer starts
  std::optional<TrialContainer> container;  // the image the trainer runs in (trial_container.hpp)
};

// 1. Prepare: refuse what is not a launched trial, the trainer's variables, the frozen experiment
//    and the step's resources against it, the command.
void prepare(LaunchState& state, const Resolver& resolve);
// 2. Take work: the ticket's work from the searcher, the checkpoint to resume from, the record as
//    the run starts. An exit status when there is nothing to run.
std::optional<int> take_work(LaunchState& state);
// --dry-run: what would run, with which variables.
void print_dry_run(std::FILE* out, const LaunchState& state);
// 3. Enter code: from here this rank's output is copied into the trial's logs, and a crash or a
//    refusal on another rank ends this one (peer_crash.hpp); the node-local copy of the code
//    snapshot as the working directory, the variables exported. The requeue status when a notice
//    came first.
std::optional<int> enter_code(LaunchState& state);
// 4. Stage data: the experiment's data staged on this node (and on every node, rank 0 waits). The
//    requeue status when a notice came meanwhile, the trial's exit status when another rank
//    crashed or refused it.
std::optional<int> stage_data(LaunchState& state);
// 5. Settle MASTER_PORT: held on this node for a trial of one rank; for one of several ranks,
//    chosen and held by rank 0 and read by the others (master_port_rendezvous.hpp). The requeue
//    status when a notice came meanwhile, the trial's exit status when another rank crashed.
std::optional<int> settle_master_port(LaunchState& state);
// 6. Enter the container: the experiment's image prepared for the trainer, when it names one
//    (trial_container.hpp); container.json written by rank 0.
void enter_container(LaunchState& state);
// Phases 3 to 6 failed on this rank (`why`: a LaunchError's message, or any other failure's), or
// the trainer's program could not be run: the trial is refused, as running again would fail
// alike. Every rank tells the others (peer_crash.hpp, "refused"), so that none of them waits for
// this one, in its own wait or in its trainer's first collective; they exit 1 too. Then rank 0
// records it failed with `why` and tells the searcher (a rank that asks for its work later finds
// the announcement: launch_phases.cpp, exit_without_work). The caller rethrows.
void refuse_trial_before_trainer(LaunchState& state, std::string_view why);
// 7. Run and account: the trainer (in its container, when there is one), its exit as a crash or
//    not, the record and the searcher told. dlx-launch's exit status.
int run_and_account(LaunchState& state);
// 8. Keep outputs: on the trial's first node, the last rank out of the node-local code copy keeps
//    the files the trainers wrote in it in <trial>/outputs/ (trial_outputs.hpp); on its other
//    nodes it names them. Said in the log; never fails the run.
void keep_outputs(LaunchState& state);

}  // namespace dlx::launch
