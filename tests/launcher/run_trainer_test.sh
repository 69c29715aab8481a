#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# MPI test of the logreg trainer: run it twice under mpirun with a fresh dlx trial environment,
# check the record (completed, accuracy > 0.8, one row per epoch) and that both runs agree
# bit for bit (determinism on one world size).
#   run_trainer_test.sh NP TRAINER CHECKER
# With REQUEUE=1 the second run reuses the first one's directory as a requeued trial
# (SLURM_RESTART_COUNT=1): the record keeps one row per epoch (replayed steps replace the old
# ones), counts the restart and ends completed.
# With LAUNCH=<dlx-launch> the ranks run `dlx-launch` with no command: the experiment's
# entrypoint from the frozen snapshot (SNAPSHOT=<yaml>), found on PATH.
# With NESTED=1 the first run gets its learning rate nested, the way dlx passes a group
# ({"optim":{"lr":0.1,"l2":0},...}), the second as the top-level learning_rate: the two must agree
# bit for bit, and the first run's record holds the group's members under their dotted names.
set -euo pipefail
np=$1 trainer=$2 checker=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/dlx-trainer-XXXXXX")
trap 'rm -rf "$dir"' EXIT
export DLX_HPARAMS='{"learning_rate":0.1,"batch_size":16,"epochs":5}'
export OMPI_MCA_rmaps_base_oversubscribe=1
run() {
  export DLX_EXPERIMENT_DIR=$dir/$1 DLX_TRIAL_ID=1
  if [[ -n "${NESTED:-}" && $1 == a ]]; then
    DLX_HPARAMS='{"optim":{"lr":0.1,"l2":0.0},"batch_size":16,"epochs":5}'
  fi
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
  nested_hparams=$DLX_HPARAMS
  export DLX_HPARAMS='{"learning_rate":0.1,"batch_size":16,"epochs":5}'
  run b
  "$checker" "$dir/a/trials/1/trial.h5" completed "$np" 0.8 5 "$dir/b/trials/1/trial.h5"
  if [[ -n "${NESTED:-}" ]]; then
    [[ $nested_hparams == *'"optim":{'* ]] || { echo "NESTED=1 ran without the nested group" >&2; exit 1; }
    /usr/bin/python3 - "$dir/a/trials/1/trial.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    got = dict(f["hparams"].attrs)
assert got.get("optim.lr") == 0.1 and "learning_rate" not in got, got
print("nested hyperparameters: ok:", sorted(got))
PY
  fi
fi
