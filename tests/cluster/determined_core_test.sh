#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A trainer written against Determined's Core API (tests/determined_api/core_trainer.py: `import
# determined as det`, core.init, searcher.operations, store_path/restore_path, should_preempt) on
# the local cluster as the unprivileged test user, 2 nodes x 1 rank (DDP over gloo): `import
# determined` resolves through dlx-launch alone, and a run `scontrol requeue`d mid-run stores a
# checkpoint on Slurm's SIGTERM, is requeued, resumes from get_cluster_info().latest_checkpoint
# and ends with the model, optimizer, scheduler and both ranks' RNG states identical to an
# uninterrupted run's.
source "$(dirname "$0")/resume_lib.sh"

/usr/bin/python3 -c 'import torch' 2>/dev/null || fail "python3-torch is not installed (scripts/install-deps.sh)"
cp "$SOURCE_DIR/tests/determined_api/core_trainer.py" "$WORK/core_trainer.py"
chmod a+r "$WORK/core_trainer.py"
RESUME_ENTRYPOINT="[/usr/bin/python3, $WORK/core_trainer.py]"
for name in det-reference det-requeue; do
  write_resume_experiment "$name"
  cat > "$WORK/$name.yaml" <<YAML
name: $name
entrypoint: $RESUME_ENTRYPOINT
seed: 3
hyperparameters: {lr: 0.05}
searcher: {name: single, metric: validation_loss, max_length: {batches: 240}}
resources: {nodes_per_trial: 2, tasks_per_node: 1, partition: low}
checkpoint: {keep_latest: 2}
environment: {CORE_STEP_DELAY_S: "0.1"}
YAML
done

reference_job=$(submit_trial det-reference)
requeue_job=$(submit_trial det-requeue)
trap 'scancel "$reference_job" "$requeue_job" 2> /dev/null || true' EXIT
note "submitted $reference_job (uninterrupted) and $requeue_job (requeued)"
wait_until 120 "the job link of det-requeue" test -L "$(user_storage)/.jobs/$requeue_job"
requeue_dir=$(trial_dir "$requeue_job")
wait_until 240 "a checkpoint of det-requeue" checkpoint_past "$requeue_dir" 20
job_running "$requeue_job" || fail "det-requeue finished before the requeue (make it longer)"
scontrol requeue "${requeue_job}_0"
note "scontrol requeue ${requeue_job}_0"
wait_for_job "$reference_job" 600
wait_for_job "$requeue_job" 600
reference_dir=$(trial_dir "$reference_job")
out="$WORK/det-requeue-${requeue_job}_0.out"
grep -q "core_trainer: preempted at step" "$out" || fail "det-requeue did not stop on Slurm's SIGTERM: $(tail -n 30 "$out")"
grep -q "core_trainer: resumed at step" "$out" || fail "det-requeue did not resume: $(tail -n 30 "$out")"
grep -q '"version": "0.38.0+dlx"' "$out" || fail "import determined was not dlx's layer: $(tail -n 30 "$out")"
/usr/bin/python3 - "$reference_dir" "$requeue_dir" <<'PY' || fail "det-requeue is not identical to the uninterrupted run"
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
    assert int(f.attrs["restarts"]) == 1, int(f.attrs["restarts"])
print("identical: model, optimizer, scheduler, both ranks' RNG states at step 240; 1 restart")
PY
expect_contains "dlx status of det-requeue" "$(as_user dlx status "$requeue_job")" "1 completed"
note "Determined Core API trainer: requeued mid-run, resumed on both ranks, identical"
