#!/usr/bin/env bash
# dlx-launch checks the step against the experiment before training: a submission whose own
# -N (which wins over the experiment file) gives a different shape fails with
# dlx-launch's message in the job output, and the trial record says failed.
source "$(dirname "$0")/lib.sh"

run_wrong() {  # run_wrong NAME "expected message" sbatch-options...
  local name=$1 expected=$2
  shift 2
  local submitted job out
  submitted=$(as_user sbatch --parsable --wait --array=0 --output="$name-%A_%a.out" "$@" \
    --dl-experiment=examples/grid.yaml examples/job.sh) || true
  job=$(job_id_of "$submitted")
  [ -n "$job" ] || fail "$name: sbatch did not submit"
  wait_for_job "$job" 120
  out=$(cat "$WORK/$name-${job}_0.out")
  expect_contains "$name: job output" "$out" "$expected"
  note "$name: $(grep 'dlx-launch:' "$WORK/$name-${job}_0.out" | head -1)"
  local dir
  dir=$(readlink "$(user_storage)/.jobs/$job")
  /usr/bin/python3 - "$dir/trials/0/trial.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    state = f.attrs["state"]
    state = state.decode() if isinstance(state, bytes) else state
    assert state == "failed", f"trial.h5 state is {state}, not failed"
PY
}

# grid.yaml asks for nodes_per_trial: 2, tasks_per_node: 1.
run_wrong one-node "dlx-launch: this step has 1 node but the experiment asks for nodes_per_trial: 2 (submit with sbatch -N 2" -N 1
note "wrong allocations rejected by dlx-launch with the difference named"
