#pragma once
// dlx-launch's whole flow (launch.cpp), callable from main and from tests:
//   1. refuse a trial the plugin refused in slurmstepd (DLX_REFUSED), then read this task's
//      placement (slurm/) and the trial contract (DLX_*); a trial outside a launched step (the
//      batch script without srun; DLX_EXPERIMENT_DIR with no ticket outside Slurm) is refused
//      before anything runs
//   2. compute the torchrun variables (launch_env), and PYTHONPATH for dlx's Python package
//   3. in a trial: load the experiment's snapshot (only the user's own directory); under srun,
//      check the step against its resources (a mismatch: rank 0 marks the trial failed,
//      dlx-launch exits 1 with the difference)
//   4. pick the command: the one given, else the experiment's entrypoint
//   5. in a trial: the ticket's work from the searcher (searcher_work: no work -> exit 0, a slot
//      given back -> the requeue exit code), the checkpoint to resume from (resume_checkpoint),
//      the record's failure count as this run starts (trial_outcome)
//   6. --dry-run: print and stop
//   7. enter the node-local copy of the code snapshot (code_workdir), export the variables (a
//      notice already received: exit for a requeue), copy this rank's output into the trial's
//      logs (trial_log), stage the experiment's data on this node (trial_data; on several nodes
//      rank 0 waits until every node has it, data_barrier; a notice meanwhile: exit for a
//      requeue), run the child and forward signals; a crash on another rank ends this one
//      (peer_crash)
//   8. rank 0: record a crash in trials/<id>/trial.h5 (trial_outcome); under max_restarts exit
//      with the requeue code, past it tell the searcher the trial failed
//   9. return the child's exit status (128 + signal when killed; the requeue code when the
//      notice ended it)
#include <cstdio>

#include "dlx/env/environment.hpp"
#include "dlx/launch/launch_env.hpp"
#include "dlx/launch/options.hpp"

namespace dlx::launch {

int run_launch(const Options& options, const env::EnvMap& env, const Resolver& resolve,
               std::FILE* out);

}  // namespace dlx::launch
