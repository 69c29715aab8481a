#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A rank that cannot reach the others: rank 1 of a 2-node trial starts in a network namespace of
# its own (isolated_rank.sh: only its node's PMIx server is relayed in), so MPI_Init works but no
# MPI traffic reaches it or leaves it, as with a wrong interface or a firewall between nodes. The trial
# must not hang: rank 0's start-up check fails within DLX_COMM_TIMEOUT_S with a message that names
# the host, the missing rank and the settings to look at, and the trial ends failed (max_restarts
# 0) with that reason in `dlx status`.
source "$(dirname "$0")/lib.sh"

# Network namespaces need unprivileged user namespaces (as the test user) here; skip where the
# kernel or a container forbids them.
if ! as_user unshare --user --map-root-user --net true 2> /dev/null; then
  echo "SKIP: cannot create a user + network namespace as $DLX_TEST_USER (unshare -rn)"
  exit 77
fi

cat > "$WORK/unreachable.yaml" <<'YAML'
name: unreachable
entrypoint: [dlx-example-logreg]
seed: 5
hyperparameters: {learning_rate: 0.3, batch_size: 16, epochs: 1}
searcher: {name: single, metric: accuracy, smaller_is_better: false}
resources: {nodes_per_trial: 2, tasks_per_node: 1}
max_restarts: 0
YAML
cp "$(dirname "$0")/isolated_rank.sh" "$(dirname "$0")/netns_relay.py" "$WORK/"
chmod a+rx "$WORK/isolated_rank.sh" "$WORK/netns_relay.py"
cat > "$WORK/unreachable.sh" <<'SH'
#!/bin/bash
export OMPI_MCA_btl=self,tcp DLX_COMM_TIMEOUT_S=5
srun --mpi=pmix bash -c 'if [ "$SLURM_PROCID" = 1 ]; then exec ./isolated_rank.sh dlx-launch; else exec dlx-launch; fi'
SH
chmod a+rx "$WORK/unreachable.sh"
chmod a+r "$WORK/unreachable.yaml"
started=$SECONDS
submitted=$(as_user sbatch --parsable --output=unreachable-%A_%a.out --dl-experiment=unreachable.yaml unreachable.sh)
job=$(job_id_of "$submitted")
wait_for_job "$job" 120
elapsed=$((SECONDS - started))
out=$(cat "$WORK/unreachable-${job}_0.out")
expect_contains "rank 0's message" "$out" "dlx: start-up check failed: rank 0 on"
expect_contains "the missing rank" "$out" "heard nothing within 5 s from rank 1 (of 2 ranks)"
expect_contains "the likely setting" "$out" "OMPI_MCA_btl_tcp_if_include"
expect_contains "the firewall hint" "$out" "no firewall blocks the ports"
status=$(as_user dlx status "$job")
expect_contains "dlx status" "$status" "# 1 trial: 1 failed"
dir=$(readlink "$(user_storage)/.jobs/$job")
/usr/bin/python3 - "$dir/trials/0/trial.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    text = lambda v: v.decode() if isinstance(v, bytes) else v
    assert text(f.attrs["state"]) == "failed", text(f.attrs["state"])
    reason = text(f.attrs["stop_reason"])
    assert "past max_restarts 0" in reason, reason
PY
note "an unreachable rank failed the trial in ${elapsed}s with the start-up check's message"
