#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The PyTorch DDP example (examples/pytorch) on 2 nodes under `srun dlx-launch -- /usr/bin/python3
# ...`: torch.distributed (gloo) wires itself from dlx-launch's variables, the dlx package records
# the metrics, and the trial completes with a loss that went down.
# Then again while another user (dlxmallory) listens on every port the job's MASTER_PORT could
# take (20000 + job id % 10000 and the next 99): rank 0 moves to a port the kernel picks, tells
# rank 1 through the trial's directory, and the trial completes (master_port_rendezvous.hpp).
# Then 2 ranks on 1 node, from a git repository (a node-local copy of the code snapshot).
source "$(dirname "$0")/lib.sh"
source "$SOURCE_DIR/tests/security/users.sh"

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

# The squatter: a process of another user holding the job's 100 candidate ports, started once
# the (held) job's id is known; told to stop through a file, and waited for.
squat_dir=$DLX_TEST_STATE/squatter  # where the squatter says it is ready, and is told to stop
rm -rf "$squat_dir" && install -d -m 1777 "$squat_dir"
ready=$squat_dir/ready
stop=$squat_dir/stop
squatter_pid=
end_squatter() {
  [ -n "$squatter_pid" ] || return 0
  touch "$stop"
  wait "$squatter_pid" 2> /dev/null || true
  squatter_pid=
}
trap end_squatter EXIT
held=$(as_user sbatch --parsable --hold --output=ddp-squat-%A_%a.out \
  --dl-experiment=examples/pytorch/ddp.yaml examples/pytorch/job.sh)
squat_job=$(job_id_of "$held")
first_port=$((20000 + squat_job % 10000))
runuser -u "$MALLORY" -- /usr/bin/python3 -c '
import os, socket, sys, time
first, ready, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3]
held = []
for offset in range(100):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("", 20000 + (first - 20000 + offset) % 10000))
        s.listen(1)
        held.append(s)
    except OSError:
        pass  # in use already: taken either way
open(ready, "w").write(str(len(held)))
deadline = time.monotonic() + 600
while not os.path.exists(stop) and time.monotonic() < deadline:
    time.sleep(0.2)
' "$first_port" "$ready" "$stop" &
squatter_pid=$!
for _ in $(seq 100); do [ -s "$ready" ] && break; sleep 0.1; done
[ -s "$ready" ] || fail "the squatter did not start"
note "$MALLORY holds $(cat "$ready") of ports $first_port.. (job $squat_job)"
scontrol release "$squat_job"
wait_for_job "$squat_job" 240
end_squatter
out=$(cat "$WORK/ddp-squat-${squat_job}_0.out")
expect_contains "job output under squatting" "$out" "ddp: 2 ranks, backend gloo"
expect_contains "job output under squatting" "$out" \
  "dlx-launch: MASTER_PORT"
expect_contains "job output under squatting" "$out" \
  ": the trial's 100 ports from $first_port are all in use on"
dir=$(readlink "$(user_storage)/.jobs/$squat_job")
state=$(/usr/bin/python3 -c 'import sys, h5py; v = h5py.File(sys.argv[1], "r").attrs["state"]; print(v.decode() if isinstance(v, bytes) else v)' \
  "$dir/trials/0/trial.h5")
[ "$state" = completed ] || fail "the trial under squatting is $state, not completed: $out"
note "with every candidate port held by $MALLORY, the DDP trial moved to a port the kernel chose and completed"

# Two ranks on one node, submitted from a git repository of the user's own: both run in one
# node-local copy of the code snapshot (code_workdir.hpp), found through its lock without either
# waiting for the other's trainer (which waits for it in init_process_group); before, one rank
# waited for the exclusive lock for as long as the other's trainer ran, and the trial hung.
as_user bash -c 'rm -rf ddprepo && mkdir -p ddprepo/examples/pytorch && cp examples/pytorch/ddp.py examples/pytorch/job.sh ddprepo/examples/pytorch/'
sed -e 's/^name: .*/name: ddp-one-node/; s/nodes_per_trial: 2/nodes_per_trial: 1/; s/tasks_per_node: 1/tasks_per_node: 2/' \
  "$WORK/examples/pytorch/ddp.yaml" > "$WORK/ddp-one-node.yaml"
chmod a+r "$WORK/ddp-one-node.yaml"
as_user bash -c 'cd ddprepo && cp ../ddp-one-node.yaml . && git init -q && git add -A &&
  git -c user.name=t -c user.email=t@example.org commit -qm ddp'
submitted=$(as_user bash -c 'cd ddprepo && sbatch --parsable --output=../ddp-one-%A_%a.out \
  --dl-experiment=ddp-one-node.yaml examples/pytorch/job.sh' 2> "$WORK/ddp-one.err") ||
  fail "sbatch of the one-node DDP trial failed: $(cat "$WORK/ddp-one.err")"
expect_contains "sbatch" "$(cat "$WORK/ddp-one.err")" "dlx: code snapshot: 3 files"
one_job=$(job_id_of "$submitted")
wait_for_job "$one_job" 240
out=$(cat "$WORK/ddp-one-${one_job}_0.out")
expect_contains "one-node DDP output" "$out" "ddp: 2 ranks, backend gloo"
[ "$(grep -c "dlx-launch: code snapshot copied to" <<< "$out")" -le 1 ] || fail "two copies for the two ranks: $out"
dir=$(readlink "$(user_storage)/.jobs/$one_job")
state=$(/usr/bin/python3 -c 'import sys, h5py; v = h5py.File(sys.argv[1], "r").attrs["state"]; print(v.decode() if isinstance(v, bytes) else v)' \
  "$dir/trials/0/trial.h5")
[ "$state" = completed ] || fail "the one-node DDP trial is $state, not completed: $out"
note "DDP with 2 ranks on one node ran from one node-local copy of the code snapshot and completed"
