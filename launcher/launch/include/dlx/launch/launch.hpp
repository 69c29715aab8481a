// SPDX-License-Identifier: Apache-2.0
#pragma once
// dlx-launch's whole flow, callable from main and from tests. run_launch (launch.cpp) runs these
// phases, in this order, over one LaunchState (src/launch_state.hpp, src/launch_phases.cpp):
//   0. refuse a trial the plugin refused in slurmstepd (DLX_REFUSED); then read the trial's
//      context once (dlx/env/trial_context.hpp: the DLX_* contract, this task's placement from
//      slurm/, the frozen experiment when first asked for) and what decides the node-local
//      directories (trial_data's local_root_context)
//   1. prepare: a trial outside a launched step (the batch script without srun; DLX_EXPERIMENT_DIR
//      with no ticket outside Slurm) is refused before anything runs; the torchrun variables
//      (launch_env) and PYTHONPATH for dlx's Python package; in a trial, the experiment's snapshot
//      (only the user's own directory) and, under srun, the step checked against its resources (a
//      mismatch: rank 0 marks the trial failed, dlx-launch exits 1 with the difference); the
//      command: the one given, else the experiment's entrypoint
//   2. take work: in a trial, the ticket's work from the searcher (searcher_work: no work -> exit
//      0, a slot given back -> the requeue exit code), the checkpoint to resume from
//      (resume_checkpoint), the record's failure count as this run starts (trial_outcome), and
//      on rank 0 the job's end time as squeue tells it (DLX_JOB_END_TIME: job_time_left.hpp);
//      --dry-run prints what would run and stops here
//   3. enter code: from here this rank's output is also copied into the trial's logs
//      (trial_log; an error that ends dlx-launch is its last line), a crash on another rank ends
//      this one (peer_crash), and a failure of this rank's (phases 3 to 6) is told to the others
//      and, by rank 0, recorded: the trial is refused on every rank (exit 1); the node-local copy
//      of the code snapshot as the working directory (code_workdir), the variables exported (a
//      notice already received: exit for a requeue)
//   4. stage data: the experiment's data staged on this node (trial_data; on several nodes rank
//      0 waits until every node has it, data_barrier; a notice meanwhile: exit for a requeue; a
//      crash or refusal announced by another rank: that one's exit)
//   5. settle MASTER_PORT: held on this node until the trainer starts (port_reservation); in a
//      trial of several ranks under srun, chosen by rank 0 and read by the others through the
//      trial's directory (master_port_rendezvous; a notice meanwhile: exit for a requeue; a crash
//      announced by another rank: that crash's exit)
//   6. enter the container the experiment names (trial_container)
//   7. run and account: the child runs with signals forwarded; a crash is announced to the other
//      ranks and recorded by rank 0 in trials/<id>/trial.h5 (trial_outcome): under max_restarts
//      exit with the requeue code, past it tell the searcher the trial failed; else the child's
//      exit status (128 + signal when killed; the requeue code when the notice ended it)
#include <cstdio>

#include "dlx/env/environment.hpp"
#include "dlx/launch/launch_env.hpp"
#include "dlx/launch/options.hpp"

namespace dlx::launch {

int run_launch(const Options& options, const env::EnvMap& env, const Resolver& resolve,
               std::FILE* out);

}  // namespace dlx::launch
