#pragma once
// dlx-launch's whole flow, callable from main and from tests:
//   1. read this task's placement (slurm/) and the trial contract (DLX_*)
//      a trial outside a launched step (the batch script without srun; DLX_EXPERIMENT_DIR with
//      no ticket outside Slurm) is refused before anything runs
//   2. compute the torchrun variables (launch_env)
//   3. under srun inside a trial: check the step against the experiment's resources
//      (a mismatch: rank 0 marks the trial failed, dlx-launch exits 1 with the difference)
//   4. pick the command: the one given, else the experiment's entrypoint
//   5. --dry-run: print and stop; else export the variables, run the child, forward signals
//   6. rank 0: record a non-zero, non-requeue exit in trials/<id>/trial.h5 (trial_outcome)
//   7. return the child's exit status (128 + signal when killed)
#include <cstdio>

#include "dlx/env/environment.hpp"
#include "dlx/launch/launch_env.hpp"
#include "dlx/launch/options.hpp"

namespace dlx::launch {

int run_launch(const Options& options, const env::EnvMap& env, const Resolver& resolve,
               std::FILE* out);

}  // namespace dlx::launch
