#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A 2-node x 2-task trial of the C++ example: four MPI ranks over srun --mpi=pmix, fused
# allreduce and parameter broadcast through libdlx; the record shows 4 ranks on 2 nodes, a loss
# that went down and a useful accuracy.
source "$(dirname "$0")/lib.sh"

cat > "$WORK/two-by-two.yaml" <<'YAML'
name: two-by-two
entrypoint: [dlx-example-logreg]
seed: 5
hyperparameters: {learning_rate: 0.3, batch_size: 16, epochs: 4}
searcher: {name: single, metric: accuracy, smaller_is_better: false}
resources: {nodes_per_trial: 2, tasks_per_node: 2}
YAML
# The local cluster's "nodes" are slurmd instances on one host sharing /dev/shm, where Open MPI's
# shared-memory transport (vader) names its segments by host name and local rank: local rank 0 of
# n1 and of n2 would collide. A real cluster has one /dev/shm per node; here the ranks use TCP
# (over lo, as lib.sh's OMPI_MCA_btl_tcp_if_include=lo says).
cat > "$WORK/two-by-two.sh" <<'SH'
#!/bin/bash
export OMPI_MCA_btl=self,tcp
srun --mpi=pmix dlx-launch
SH
chmod a+rx "$WORK/two-by-two.sh"
chmod a+r "$WORK/two-by-two.yaml"
submitted=$(as_user sbatch --parsable --wait --output=two-by-two-%A_%a.out \
  --dl-experiment=two-by-two.yaml two-by-two.sh) || fail "the trial failed: $(cat "$WORK"/two-by-two-*.out)"
job=$(job_id_of "$submitted")
wait_for_job "$job" 180
dir=$(readlink "$(user_storage)/.jobs/$job")
/usr/bin/python3 - "$dir/trials/0/trial.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    text = lambda v: v.decode() if isinstance(v, bytes) else v
    assert text(f.attrs["state"]) == "completed", text(f.attrs["state"])
    assert int(f.attrs["world_size"]) == 4, f.attrs["world_size"]
    nodes = text(f.attrs["nodes"]).split(",")
    assert len(nodes) == 4 and len(set(nodes)) == 2, nodes
    loss = f["metrics/training/loss"][:]
    assert len(loss) == 4 and loss[-1] < loss[0], loss
    accuracy = f["metrics/validation/accuracy"][:]
    assert accuracy[-1] > 0.8, accuracy
print(f"2x2 trial: 4 ranks on {sorted(set(nodes))}, loss {loss[0]:.4f} -> {loss[-1]:.4f}, "
      f"accuracy {accuracy[-1]:.3f}")
PY
note "2-node x 2-task trial verified"
