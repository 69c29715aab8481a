#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The dlx.torch.Loop example (examples/pytorch/mnist.py: mnist_plain.py plus five lines) under
# sbatch as the unprivileged test user, with examples/pytorch/job.sh:
#   - requeued twice with `scontrol requeue` while it trains (a DataLoader with 2 worker processes,
#     shuffling, dropout, StepLR; lengths in records), it ends with the final checkpoint and the
#     metric tables of an uninterrupted run of the same trial, byte for byte
#     (compare_checkpoints.py), two notice restarts recorded. The exact points (mid-epoch, an
#     epoch's last batch, its validation) are tests/torch/torch_loop_test.py's, signalled there
#     at chosen batches; here Slurm's own requeue lands wherever the trial is;
#   - examples/pytorch/mnist.yaml, ASHA over 8 trials, completes: trials paused at rungs, some
#     promoted (a paused one resumed from its rung checkpoint, when the order of reports makes
#     one; torch_loop_test.py's sequential tickets always do), one trained to 16384 records, none
#     failed;
#   - an experiment whose hyperparameter is misspelt (batch_sise) names the typo in its first
#     trial's log both ways (`dlx logs`).
source "$(dirname "$0")/resume_lib.sh"

/usr/bin/python3 -c 'import torch' 2>/dev/null || fail "python3-torch is not installed (scripts/install-deps.sh)"

# write_mnist NAME HYPERPARAMETERS SEARCHER [ARGS...]: $WORK/NAME.yaml running mnist.py with ARGS.
write_mnist() {
  local name=$1 hparams=$2 searcher=$3; shift 3
  local args=""
  for arg in "$@"; do args+=", \"$arg\""; done
  cat > "$WORK/$name.yaml" <<YAML
name: $name
entrypoint: [/usr/bin/python3, examples/pytorch/mnist.py$args]
seed: 5
hyperparameters: $hparams
searcher: $searcher
resources: {nodes_per_trial: 1, tasks_per_node: 1, partition: low}
checkpoint: {period: {batches: 40}, keep_latest: 2}
YAML
  chmod a+r "$WORK/$name.yaml"
}
submit() {  # submit NAME YAML: the array job id
  local out
  out=$(as_user sbatch --parsable --open-mode=append --output="$1-%A_%a.out" --dl-experiment="$2" \
    examples/pytorch/job.sh 2> "$WORK/$1.sbatch.err") || fail "sbatch $2 failed: $(cat "$WORK/$1.sbatch.err")"
  job_id_of "$out"
}

# 4 epochs of 8192 images in batches of 32 (256 a epoch): 32768 records.
single="{name: single, metric: accuracy, smaller_is_better: false, max_length: {records: 32768}}"
hparams="{batch_size: 32, lr: 0.5, gamma: 0.8}"
write_mnist loop-reference "$hparams" "$single" --train-size 8192
write_mnist loop-requeue "$hparams" "$single" --train-size 8192
write_mnist loop-typo "{batch_sise: 32}" "{name: single, metric: accuracy, smaller_is_better: false}" \
  --epochs 1 --train-size 512
reference_job=$(submit loop-reference loop-reference.yaml)
requeue_job=$(submit loop-requeue loop-requeue.yaml)
typo_job=$(submit loop-typo loop-typo.yaml)
asha_job=$(submit mnist-asha examples/pytorch/mnist.yaml)
trap 'scancel "$reference_job" "$requeue_job" "$typo_job" "$asha_job" 2> /dev/null || true' EXIT
wait_until 120 "the job link of loop-requeue" test -L "$(user_storage)/.jobs/$requeue_job"
requeue_dir=$(trial_dir "$requeue_job")

# Two requeues while it trains: after the checkpoint of batch 40 and after the first epoch's
# validation (256 batches = 8192 records).
wait_until 300 "a checkpoint of loop-requeue" checkpoint_past "$requeue_dir" 1280
job_running "$requeue_job" || fail "loop-requeue finished before the requeue (make it longer)"
scontrol requeue "${requeue_job}_0"
note "scontrol requeue ${requeue_job}_0 after the checkpoint of step $(latest_checkpoint_step "$requeue_dir")"
wait_until 300 "loop-requeue's restart" restarts_at_least "$requeue_dir" 1
validated() {
  /usr/bin/python3 -c "import h5py,sys; f=h5py.File(sys.argv[1]+'/trial.h5','r'); sys.exit(0 if 'metrics/validation/steps' in f and len(f['metrics/validation/steps'])>=1 else 1)" "$1"
}
wait_until 300 "loop-requeue's first validation" validated "$requeue_dir"
wait_until 120 "loop-requeue running again" job_running "$requeue_job"
scontrol requeue "${requeue_job}_0"
note "scontrol requeue ${requeue_job}_0 after the first epoch's validation"

for job in "$reference_job" "$requeue_job" "$typo_job"; do wait_for_job "$job" 600; done
reference_dir=$(trial_dir "$reference_job")
/usr/bin/python3 "$SOURCE_DIR/tests/tools/compare_checkpoints.py" "$reference_dir" "$requeue_dir" \
  --notices 2 --tensor model/conv1.weight --tensor optimizer/state/0/square_avg \
  --tensor rng/rank-0/torch --tensor rng/rank-0/loader/generator \
  --unseeded rng/rank-0/python --unseeded rng/rank-0/numpy ||
  fail "the requeued mnist.py is not identical to the uninterrupted run: $(tail -n 30 "$WORK/loop-requeue-${requeue_job}_0.out")"
grep -q "dlx.torch.Loop: checkpoint requested: the requeued trial resumes at step" \
  "$WORK/loop-requeue-${requeue_job}_0.out" || fail "loop-requeue did not checkpoint at the requeue"
note "mnist.py requeued twice by scontrol: resumed where it stopped, identical to the uninterrupted run"

logs=$(as_user dlx logs "$typo_job" 0) || fail "dlx logs $typo_job 0 failed: $logs"
expect_contains "the typo trial's log" "$logs" \
  "dlx: warning: hyperparameter 'batch_size' is not defined by the experiment, so trial.hparam(\"batch_size\", ...) uses its default 64 (did you mean 'batch_sise'?"
expect_contains "the typo trial's log" "$logs" \
  "dlx: warning: the experiment defines hyperparameter 'batch_sise', which this trial has not read: did you mean 'batch_size', which it asked for and got the default 64?"
note "the misspelt hyperparameter is named in the first trial's log, both ways"

wait_for_job "$asha_job" 900
cat "$WORK"/mnist-asha-"$asha_job"_*.out > "$WORK/mnist-asha.all.out"
grep -q "Traceback" "$WORK/mnist-asha.all.out" &&
  fail "an ASHA task failed: $(grep -B2 -A12 Traceback "$WORK/mnist-asha.all.out" | head -40)"
status=$(as_user dlx status "$asha_job") || fail "dlx status $asha_job failed"
echo "$status"
expect_contains "dlx status" "$status" "completed at 16384"
/usr/bin/python3 - "$(readlink "$(user_storage)/.jobs/$asha_job")" "$WORK/mnist-asha.all.out" <<'PY'
import glob, re, sys, h5py
text = lambda v: v.decode() if isinstance(v, bytes) else v
output = open(sys.argv[2]).read()
states, promoted, resumed = {}, [], []
for record in sorted(glob.glob(sys.argv[1] + "/trials/*/trial.h5")):
    with h5py.File(record, "r") as f:
        trial = int(record.split("/")[-2])
        states[trial] = text(f.attrs["state"])
        steps = [int(s) for s in f["metrics/validation/steps"][:]]
    assert steps == sorted(set(steps)), (trial, steps)  # each validation row once
    assert 4096 in steps, (trial, steps)                # every trial reached rung 0
    if 8192 in steps:
        promoted.append(trial)
    # A trial paused at a rung and trained further (promoted later, by another array task)
    # resumed from that rung's checkpoint.
    for rung in map(int, re.findall(rf"dlx: trial {trial} step (\d+): searcher says pause", output)):
        if any(step > rung for step in steps):
            assert re.search(rf"dlx: resuming from \S*/trials/{trial}/checkpoints/step-{rung}\.h5",
                             output), f"trial {trial} went on after its pause at {rung} without its checkpoint"
            resumed.append(f"trial {trial} from {rung}")
assert len(states) == 8, states
assert all(s in ("completed", "paused") for s in states.values()), states
assert promoted, states
print(f"mnist ASHA: trial states {states}; promoted past rung 0: {promoted}; "
      f"resumed from a pause: {resumed or 'none this time (promoted as they reported)'}")
PY
note "examples/pytorch/mnist.yaml: ASHA paused, promoted and completed trials of the loop example"
