#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A trainer written against Determined's Core API (tests/determined_api/core_trainer.py: `import
# determined as det`, core.init, searcher.operations, store_path/restore_path, should_preempt) on
# the local cluster as the unprivileged test user, 2 nodes x 1 rank (DDP over gloo): `import
# determined` resolves through dlx-launch alone, and a run `scontrol requeue`d mid-run stores a
# checkpoint on Slurm's SIGTERM, is requeued, resumes from get_cluster_info().latest_checkpoint
# and ends with the model, optimizer, scheduler and both ranks' RNG states identical to an
# uninterrupted run's. A third run, slowed down and submitted with --time=1 --signal=USR2@20,
# cannot finish in one allocation: should_preempt() turns true on each time-limit notice, and the
# chain of allocations ends identical too, each restart recorded as the time limit's.
# A PyTorchTrial (tests/determined_api/model_def.py, `entrypoint: model_def:RegressionTrial`) on 2
# nodes x 1 rank, `scontrol requeue`d mid-run, ends identical to an uninterrupted 2-node run.
# And a Determined TFKerasTrial as the entrypoint is refused by sbatch, naming what to use.
source "$(dirname "$0")/resume_lib.sh"

/usr/bin/python3 -c 'import torch' 2>/dev/null || fail "python3-torch is not installed (scripts/install-deps.sh)"
cp "$SOURCE_DIR/tests/determined_api/core_trainer.py" "$WORK/core_trainer.py"
chmod a+r "$WORK/core_trainer.py"
RESUME_ENTRYPOINT="[/usr/bin/python3, $WORK/core_trainer.py]"
cat > "$WORK/keras_def.py" <<'PY'
import determined as det


class KerasTrial(det.keras.TFKerasTrial):
    pass
PY
chmod a+r "$WORK/keras_def.py"
write_resume_experiment det-keras
cat > "$WORK/det-keras.yaml" <<YAML
name: det-keras
entrypoint: keras_def:KerasTrial
hyperparameters: {global_batch_size: 16}
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
YAML
before=$(squeue -h -o %i | wc -l)
if out=$(as_user sbatch --parsable --dl-experiment=det-keras.yaml det-keras.sh 2>&1); then
  fail "sbatch accepted a TFKerasTrial: $out"
fi
expect_contains "sbatch of a TFKerasTrial" "$out" \
  "entrypoint keras_def:KerasTrial is a TensorFlow/Keras trial (det.keras.TFKerasTrial) ($WORK/keras_def.py, line 4): dlx runs PyTorchTrial and Core API code: port it to det.pytorch.PyTorchTrial"
[ "$(squeue -h -o %i | wc -l)" = "$before" ] || fail "the refused TFKerasTrial queued a job"
note "sbatch refused a TFKerasTrial entrypoint, nothing queued"

for name in det-reference det-requeue det-timelimit; do
  write_resume_experiment "$name"
  delay=0.1
  # 240 steps of 0.3 s: no allocation of 1 minute (its notice 10-40 s in) can finish them.
  [ "$name" = det-timelimit ] && delay=0.3
  cat > "$WORK/$name.yaml" <<YAML
name: $name
entrypoint: $RESUME_ENTRYPOINT
seed: 3
hyperparameters: {lr: 0.05}
searcher: {name: single, metric: validation_loss, max_length: {batches: 240}}
resources: {nodes_per_trial: 2, tasks_per_node: 1, partition: low}
checkpoint: {keep_latest: 2}
environment: {CORE_STEP_DELAY_S: "$delay"}
YAML
done

# The PyTorchTrial pair: the harness runs the class from the job's directory (no code snapshot here).
cp "$SOURCE_DIR/tests/determined_api/model_def.py" "$WORK/model_def.py"
chmod a+r "$WORK/model_def.py"
for name in pt-reference pt-requeue; do
  write_resume_experiment "$name"
  cat > "$WORK/$name.yaml" <<YAML
name: $name
entrypoint: model_def:RegressionTrial
seed: 3
hyperparameters: {lr: 0.05, global_batch_size: 16}
searcher: {name: single, metric: validation_loss, max_length: {batches: 40}}
resources: {nodes_per_trial: 2, tasks_per_node: 1, partition: low}
checkpoint: {keep_latest: 3, period: {batches: 8}}
environment: {TRIAL_STEP_DELAY_S: "0.4", TRIAL_WORKERS: "0"}
YAML
done
pt_reference_job=$(submit_trial pt-reference)
pt_requeue_job=$(submit_trial pt-requeue)
reference_job=$(submit_trial det-reference)
requeue_job=$(submit_trial det-requeue)
limit_job=$(submit_trial det-timelimit --time=1 --signal=USR2@20)
trap 'scancel "$reference_job" "$requeue_job" "$limit_job" "$pt_reference_job" "$pt_requeue_job" 2> /dev/null || true' EXIT
note "submitted $reference_job (uninterrupted), $requeue_job (requeued) and $limit_job (time-limit chain)"
wait_until 120 "the job link of det-requeue" test -L "$(user_storage)/.jobs/$requeue_job"
requeue_dir=$(trial_dir "$requeue_job")
wait_until 240 "a checkpoint of det-requeue" checkpoint_past "$requeue_dir" 20
job_running "$requeue_job" || fail "det-requeue finished before the requeue (make it longer)"
scontrol requeue "${requeue_job}_0"
note "scontrol requeue ${requeue_job}_0"
wait_until 120 "the job link of pt-requeue" test -L "$(user_storage)/.jobs/$pt_requeue_job"
pt_requeue_dir=$(trial_dir "$pt_requeue_job")
wait_until 240 "a checkpoint of pt-requeue" checkpoint_past "$pt_requeue_dir" 8
job_running "$pt_requeue_job" || fail "pt-requeue finished before the requeue (make it longer)"
scontrol requeue "${pt_requeue_job}_0"
note "scontrol requeue ${pt_requeue_job}_0 (PyTorchTrial)"
wait_for_job "$pt_reference_job" 600
wait_for_job "$pt_requeue_job" 600
pt_out=$(cat "$WORK/pt-requeue-${pt_requeue_job}_0.out")
grep -q "dlx-test: srun exited 0 (restart 1)" <<< "$pt_out" || fail "pt-requeue did not end after one requeue: $(tail -n 30 <<< "$pt_out")"
/usr/bin/python3 "$SOURCE_DIR/tests/tools/compare_checkpoints.py" "$(trial_dir "$pt_reference_job")" "$pt_requeue_dir" \
  --tensor model_0/module.0.weight --tensor rng/rank-1/torch --restarts 1 --notices 1 ||
  fail "the requeued PyTorchTrial is not identical to the uninterrupted one"
expect_contains "dlx status of pt-requeue" "$(as_user dlx status "$pt_requeue_job")" "# 1 trial: 1 completed"
note "PyTorchTrial on 2 nodes: requeued mid-run, resumed on both ranks, identical"
wait_for_job "$reference_job" 600
wait_for_job "$requeue_job" 600
wait_for_job "$limit_job" 600
reference_dir=$(trial_dir "$reference_job")
limit_dir=$(trial_dir "$limit_job")
out="$WORK/det-requeue-${requeue_job}_0.out"
grep -q "core_trainer: preempted at step" "$out" || fail "det-requeue did not stop on Slurm's SIGTERM: $(tail -n 30 "$out")"
grep -q "core_trainer: resumed at step" "$out" || fail "det-requeue did not resume: $(tail -n 30 "$out")"
grep -q '"version": "0.38.0+dlx"' "$out" || fail "import determined was not dlx's layer: $(tail -n 30 "$out")"
limit_out=$(cat "$WORK/det-timelimit-${limit_job}_0.out")
case "$limit_out" in *"DUE TO TIME LIMIT"*) fail "an allocation of det-timelimit was killed by its time limit" ;; esac
limit_restarts=$(/usr/bin/python3 -c "import h5py,sys; print(int(h5py.File(sys.argv[1]+'/trial.h5','r').attrs['restarts']))" "$limit_dir")
[ "$limit_restarts" -ge 1 ] || fail "det-timelimit finished in one allocation: no time-limit chain (make it longer)"
for ((run = 1; run <= limit_restarts; run++)); do
  cause=$(restart_attr "$limit_dir" "$run" cause)
  [ "$cause" = time_limit ] || fail "det-timelimit's restart $run has cause '$cause', not time_limit"
done
grep -q "core_trainer: preempted at step" <<< "$limit_out" || fail "det-timelimit did not stop on the notice: $(tail -n 30 <<< "$limit_out")"
for pair in "$requeue_dir:1" "$limit_dir:$limit_restarts"; do
/usr/bin/python3 - "$reference_dir" "${pair%:*}" "${pair##*:}" <<'PY' || fail "${pair%:*} is not identical to the uninterrupted run"
import glob, io, sys

import h5py
import numpy
import torch


def final_state(trial_dir):
    newest = max(glob.glob(f"{trial_dir}/checkpoints/step-*.h5"), key=lambda p: int(p.rsplit("-", 1)[1][:-3]))
    with h5py.File(newest, "r") as f:
        names = []
        f.visit(names.append)
        found = [n for n in names if n.endswith("determined/files/state.pt") and isinstance(f[n], h5py.Dataset)]
        assert len(found) == 1, f"{newest}: {names}"
        return newest, torch.load(io.BytesIO(numpy.asarray(f[found[0]]).tobytes()))


def same(a, b, where):
    if isinstance(a, torch.Tensor):
        assert torch.equal(a, b), f"{where} differs"
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            same(a[key], b[key], f"{where}/{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


(want_path, want), (got_path, got) = final_state(sys.argv[1]), final_state(sys.argv[2])
assert want_path.endswith("step-240.h5") and got_path.endswith("step-240.h5"), (want_path, got_path)
same(want, got, "state.pt")
with h5py.File(f"{sys.argv[2]}/trial.h5", "r") as f:
    assert int(f.attrs["restarts"]) == int(sys.argv[3]), (int(f.attrs["restarts"]), sys.argv[3])
print(f"identical: model, optimizer, scheduler, both ranks' RNG states at step 240; {sys.argv[3]} restart(s)")
PY
done
expect_contains "dlx status of det-requeue" "$(as_user dlx status "$requeue_job")" "# 1 trial: 1 completed"
expect_contains "dlx status of det-timelimit" "$(as_user dlx status "$limit_job")" "# 1 trial: 1 completed"
note "Determined Core API trainer: requeued mid-run and chained over $((limit_restarts + 1)) time-limited allocations, resumed on both ranks, identical"
