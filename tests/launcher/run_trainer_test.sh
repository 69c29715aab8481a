#!/bin/bash
# MPI test of the logreg trainer: run it twice under mpirun with a fresh dlx trial environment,
# check the record (completed, accuracy > 0.8, one row per epoch) and that both runs agree
# bit for bit (determinism on one world size).
#   run_trainer_test.sh NP TRAINER CHECKER
# With REQUEUE=1 the second run reuses the first one's directory as a requeued trial
# (SLURM_RESTART_COUNT=1): the record keeps one row per epoch (replayed steps replace the old
# ones), counts the restart and ends completed.
# With LAUNCH=<dlx-launch> the ranks run `dlx-launch` with no command: the experiment's
# entrypoint from the frozen snapshot (SNAPSHOT=<yaml>), found on PATH.
set -euo pipefail
np=$1 trainer=$2 checker=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/dlx-trainer-XXXXXX")
trap 'rm -rf "$dir"' EXIT
export DLX_HPARAMS='{"learning_rate":0.1,"batch_size":16,"epochs":5}'
export OMPI_MCA_rmaps_base_oversubscribe=1
run() {
  export DLX_EXPERIMENT_DIR=$dir/$1 DLX_TRIAL_ID=1
  mkdir -p "$DLX_EXPERIMENT_DIR"
  if [[ -n "${LAUNCH:-}" ]]; then
    cp "$SNAPSHOT" "$DLX_EXPERIMENT_DIR/experiment.yaml"
    PATH="$(dirname "$trainer"):$PATH" mpirun --oversubscribe -n "$np" "$LAUNCH"
  else
    mpirun --oversubscribe -n "$np" "$trainer"
  fi
}
run a
if [[ -n "${REQUEUE:-}" ]]; then
  cp "$dir/a/trials/1/trial.h5" "$dir/first-run.h5"
  SLURM_RESTART_COUNT=1 run a
  "$checker" "$dir/a/trials/1/trial.h5" completed "$np" 0.8 5 "$dir/first-run.h5" 1
else
  run b
  "$checker" "$dir/a/trials/1/trial.h5" completed "$np" 0.8 5 "$dir/b/trials/1/trial.h5"
fi
