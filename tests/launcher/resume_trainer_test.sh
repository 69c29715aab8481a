#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# MPI test of checkpoint and resume in the logreg trainer (no Slurm): the same trial resumed from
# any of its checkpoints, or stopped by a checkpoint signal and run again, ends with final weights
# byte-identical to an uninterrupted run, the same metrics (no duplicated rows) and the restart
# recorded in trial.h5.
#   resume_trainer_test.sh NP TRAINER
set -euo pipefail
np=$1 trainer=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/dlx-resume-XXXXXX")
trap 'rm -rf "$dir"' EXIT
export OMPI_MCA_rmaps_base_oversubscribe=1 DLX_TRIAL_ID=1
fail() { echo "FAIL: $*" >&2; exit 1; }
tools=$(cd "$(dirname "$0")/../tools" && pwd)

experiment() {  # experiment DIR EPOCHS PERIOD
  mkdir -p "$1"
  cat > "$1/experiment.yaml" <<YAML
name: resume-local
entrypoint: [dlx-example-logreg]
seed: 3
hyperparameters: {learning_rate: 0.1, batch_size: 16, epochs: $2}
searcher: {name: single, metric: accuracy, smaller_is_better: false}
checkpoint: {period: {batches: $3}, keep_latest: 100, keep_best: 0}
YAML
}
run() {  # run DIR EPOCHS [mpirun args...]: the trainer in trial DIR
  local d=$1 epochs=$2; shift 2
  DLX_EXPERIMENT_DIR=$d DLX_CHECKPOINT_DIR=$d/trials/1/checkpoints \
    DLX_HPARAMS="{\"learning_rate\":0.1,\"batch_size\":16,\"epochs\":$epochs}" \
    mpirun --oversubscribe -n "$np" "$@" "$trainer"
}
# compare REFERENCE_DIR DIR RESTARTS: final checkpoint tensors (the model's weights and bias among
# them) and metrics equal, completed, RESTARTS restart events recorded.
compare() {
  /usr/bin/python3 "$tools/compare_checkpoints.py" "$1/trials/1" "$2/trials/1" --restarts "$3" \
    --tensor model/weights --tensor model/bias
}

# 1. Uninterrupted reference: a checkpoint every 40 batches and at the end.
experiment "$dir/ref" 3 40
run "$dir/ref" 3
ls "$dir/ref/trials/1/checkpoints"

# 2. Resumed from an early, a mid-epoch and the last periodic checkpoint, with the reference's
#    full trial.h5 (metrics past the checkpoint must be dropped, not duplicated).
for step in 40 120 280; do
  d=$dir/from-$step
  experiment "$d" 3 40
  mkdir -p "$d/trials/1/checkpoints"
  cp "$dir/ref/trials/1/trial.h5" "$d/trials/1/"
  for f in "$dir"/ref/trials/1/checkpoints/step-*.h5; do
    n=${f##*step-}; n=${n%.h5}
    [ "$n" -le "$step" ] && cp "$f" "$d/trials/1/checkpoints/"
  done
  SLURM_RESTART_COUNT=1 run "$d" 3 -x SLURM_RESTART_COUNT 2> "$d.err"
  grep -q "resuming from .*step-$step.h5" "$d.err" || fail "did not resume from step $step: $(cat "$d.err")"
  echo "resumed from step $step:"
  # No restart event: the copied trial.h5 says completed, and a run of a trial whose last run had
  # ended its work (as a promotion resumes a paused one) is not a restart; 4. records a requeue's.
  compare "$dir/ref" "$d" 0
done

# 3. A newer damaged checkpoint is skipped: resumes from the previous valid one.
d=$dir/damaged
experiment "$d" 3 40
mkdir -p "$d/trials/1/checkpoints"
cp "$dir"/ref/trials/1/checkpoints/step-{40,80}.h5 "$d/trials/1/checkpoints/"
head -c 2000 "$dir/ref/trials/1/checkpoints/step-120.h5" > "$d/trials/1/checkpoints/step-120.h5"
run "$d" 3 2> "$d.err"
grep -q "skipping checkpoint .*step-120.h5" "$d.err" || fail "damaged step-120.h5 not reported: $(cat "$d.err")"
grep -q "resuming from .*step-80.h5" "$d.err" || fail "did not fall back to step 80: $(cat "$d.err")"
compare "$dir/ref" "$d" 0

# 4. A checkpoint signal: SIGUSR2 to one rank mid-run; every rank stops after the same step,
#    saves, exits 85; the second run resumes and ends identical to a reference of the same length.
experiment "$dir/long-ref" 100 1000
run "$dir/long-ref" 100
d=$dir/signal
experiment "$d" 100 1000
run "$d" 100 > "$d.out" 2> "$d.err" &
pid=$!
for _ in $(seq 200); do  # until the first epoch is reported, then signal one rank
  grep -q "step 103 validation" "$d.out" 2>/dev/null && break
  sleep 0.05
done
victim=$(pgrep -f -n -- "^$trainer" || true)  # a rank, not mpirun
[ -n "$victim" ] || fail "no trainer process to signal"
kill -USR2 "$victim"
status=0; wait "$pid" || status=$?
# mpirun reports the first non-zero exit of a rank: 85.
grep -q "exiting 85 for a requeue" "$d.err" || fail "no checkpoint-and-exit (status $status): $(cat "$d.err")"
stopped=$(grep -o "checkpoint at step [0-9]*" "$d.err" | head -1 | grep -o "[0-9]*$")
[ -f "$d/trials/1/checkpoints/step-$stopped.h5" ] || fail "no checkpoint at step $stopped"
echo "stopped by SIGUSR2 after step $stopped (mpirun status $status)"
SLURM_RESTART_COUNT=1 run "$d" 100 -x SLURM_RESTART_COUNT 2> "$d.err2"
grep -q "resuming from .*step-$stopped.h5" "$d.err2" || fail "did not resume from $stopped: $(cat "$d.err2")"
compare "$dir/long-ref" "$d" 1
echo "resume test passed"
