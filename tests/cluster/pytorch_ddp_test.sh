#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The PyTorch DDP example (examples/pytorch) on 2 nodes under `srun dlx-launch -- /usr/bin/python3
# ...`: torch.distributed (gloo) wires itself from dlx-launch's variables, the dlx package records
# the metrics, and the trial completes with a loss that went down.
source "$(dirname "$0")/lib.sh"

/usr/bin/python3 -c 'import torch' 2>/dev/null || fail "python3-torch is not installed (scripts/install-deps.sh)"
submitted=$(as_user sbatch --parsable --wait --output=ddp-%A_%a.out \
  --dl-experiment=examples/pytorch/ddp.yaml examples/pytorch/job.sh) ||
  fail "the DDP trial failed: $(cat "$WORK"/ddp-*.out)"
job=$(job_id_of "$submitted")
wait_for_job "$job" 240
out=$(cat "$WORK/ddp-${job}_0.out")
expect_contains "job output" "$out" "ddp: 2 ranks, backend gloo"
dir=$(readlink "$(user_storage)/.jobs/$job")
/usr/bin/python3 - "$dir/trials/0/trial.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    text = lambda v: v.decode() if isinstance(v, bytes) else v
    assert text(f.attrs["state"]) == "completed", text(f.attrs["state"])
    assert int(f.attrs["world_size"]) == 2, f.attrs["world_size"]
    loss = f["metrics/training/loss"][:]
    assert len(loss) == 4 and loss[-1] < loss[0], loss
    accuracy = f["metrics/validation/accuracy"][:]
    assert accuracy[-1] > 0.9, accuracy
print(f"ddp: loss {loss[0]:.4f} -> {loss[-1]:.4f}, accuracy {accuracy[-1]:.3f}")
PY
note "PyTorch DDP example verified on 2 nodes"
