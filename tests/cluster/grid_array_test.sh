#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The spine, end to end as an unprivileged user: the grid example becomes an array of the right
# size and throttle, every trial trains data-parallel on two nodes and leaves a trial.h5 that
# h5py and h5dump read, and `dlx status JOBID` shows one row per trial.
source "$(dirname "$0")/lib.sh"

submitted=$(as_user sbatch --parsable --hold --dl-experiment=examples/grid.yaml \
  --output=grid-%A_%a.out examples/job.sh 2> "$WORK/grid.sbatch.err") ||
  fail "sbatch failed: $(cat "$WORK/grid.sbatch.err")"
job=$(job_id_of "$submitted")
note "submitted job $job: $(cat "$WORK/grid.sbatch.err")"
expect_contains "sbatch's report" "$(cat "$WORK/grid.sbatch.err")" "dlx: experiment logreg-grid: 4 trials as array 0-3%2"
expect_contains "squeue" "$(squeue -h -j "$job" -o %i)" "${job}_[0-3%2]"
expect_contains "job name" "$(squeue -h -j "$job" -o %j)" "logreg-grid"
scontrol release "$job"
wait_for_job "$job" 300

link=$(user_storage)/.jobs/$job
[ -L "$link" ] || fail "no job link $link"
dir=$(readlink "$link")
note "experiment directory $dir"
[ -f "$dir/experiment.yaml" ] || fail "no frozen experiment.yaml in $dir"
[ "$(stat -c %U "$dir")" = "$DLX_TEST_USER" ] || fail "$dir is not owned by $DLX_TEST_USER"

status=$(as_user dlx status "$job")
echo "$status"
expect_contains "dlx status" "$status" "# 4 trials: 4 completed"
expect_contains "dlx status" "$status" "# best: trial"
[ "$(echo "$status" | grep -c '^[0-3] ')" = 4 ] || fail "dlx status should print 4 trial rows"

# Hyperparameters as attributes, metrics as datasets, two distinct nodes: read with h5py.
as_user dlx status --json "$job" > "$WORK/grid.status.json"
/usr/bin/python3 - "$dir" "$WORK/grid.status.json" <<'PY'
import json, sys, h5py, numpy as np
directory, status = sys.argv[1], json.load(open(sys.argv[2]))
for trial in status["trials"]:
    with h5py.File(f"{directory}/trials/{trial['id']}/trial.h5", "r") as f:
        state = f.attrs["state"]
        state = state.decode() if isinstance(state, bytes) else state
        assert state == "completed", (trial["id"], state)
        for name, expected in trial["hparams"].items():
            got = f["hparams"].attrs[name]
            assert np.isclose(got, expected), (trial["id"], name, got, expected)
        nodes = f.attrs["nodes"]
        nodes = (nodes.decode() if isinstance(nodes, bytes) else nodes).split(",")
        assert len(nodes) == 2 and nodes[0] != nodes[1], f"trial {trial['id']} ran on {nodes}"
        accuracy = f["metrics/validation/accuracy"][:]
        assert len(accuracy) == 5 and len(f["metrics/validation/steps"][:]) == 5, accuracy
        assert len(f["metrics/training/loss"][:]) > 0
print("h5py: 4 trials verified (hparams, metrics, two nodes each)")
PY
grep -q "0.01" <<< "$(h5dump -a /hparams/learning_rate "$dir/trials/0/trial.h5")" ||
  fail "h5dump does not show learning_rate 0.01 in trial 0"
note "grid experiment verified"
