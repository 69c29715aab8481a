// SPDX-License-Identifier: Apache-2.0
// bench_trivial_trainer: a trainer that costs nothing, so that bench_many_trials.sh measures what
// dlx and Slurm spend per trial: no MPI (a framework program's Trial), one validation report of
// a quadratic in the hyperparameter x, and the end of the trial.
#include "dlx/trial.hpp"

int main() {
  dlx::TrialOptions options;
  options.communicator = false;
  dlx::Trial trial(options);
  const double x = trial.hparam<double>("x");
  const double loss = (x - 0.3) * (x - 0.3);
  // A random search has no later step to ask for: whatever the answer, the trial is done.
  static_cast<void>(trial.report_validation(1, {{"loss", loss}}));
  trial.finish();
  return 0;
}
