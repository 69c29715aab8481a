#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# dlx-launch checks the step against the experiment before training: a submission whose own
# -N (which wins over the experiment file) gives a different shape, or a job script that runs
# dlx-launch without srun, fails with dlx-launch's message in the job output, the trial record
# says failed, and dlx status says why.
source "$(dirname "$0")/lib.sh"

run_wrong() {  # run_wrong NAME "expected message" JOB_SCRIPT sbatch-options...
  local name=$1 expected=$2 script=$3
  shift 3
  local submitted job out
  submitted=$(as_user sbatch --parsable --wait --array=0 --output="$name-%A_%a.out" "$@" \
    --dl-experiment=examples/grid.yaml "$script") || true
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
  # dlx status names the reason under its table (as the user who ran it).
  expect_contains "$name: dlx status" "$(as_user dlx status "$job")" "# trial 0 failed: $expected"
}

# grid.yaml asks for nodes_per_trial: 2, tasks_per_node: 1.
run_wrong one-node "dlx-launch: this step has 1 node but the experiment asks for nodes_per_trial: 2 (submit with sbatch -N 2" \
  examples/job.sh -N 1
note "wrong allocations rejected by dlx-launch with the difference named"

# The batch script itself, not a step: Slurm's real batch environment must be told from srun's.
printf '#!/bin/bash\ndlx-launch\n' > "$WORK/no-srun.sh"
chmod a+rx "$WORK/no-srun.sh"
run_wrong no-srun "dlx-launch: not started by srun: this is job" no-srun.sh
note "dlx-launch without srun refused, the trial marked failed with the fix"
