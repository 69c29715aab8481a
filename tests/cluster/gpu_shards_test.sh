#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# GPUs shared through Slurm's gres/shard, as the unprivileged user (issue 36): on this cluster
# each node has 2 placeholder GPUs of 4 shards each (`dlx cluster up --gpus 2 --placeholder-gpus
# --shards-per-gpu 4`: Slurm schedules them and sets CUDA_VISIBLE_DEVICES; nothing runs on them).
# A random search of 8 trials with trials_per_gpu: 2 and shards_per_gpu: 4:
#  - sbatch and dlx plan say how the GPUs are shared; each trial is an array task of its own that
#    asks for 2 shards (--gres=shard:2), not a GPU;
#  - each trial sees one GPU (CUDA_VISIBLE_DEVICES, set by Slurm), SLURM_SHARDS_ON_NODE=2 and
#    DLX_GPU_MEMORY_FRACTION=0.5 (dlx-launch: its shards over the GPU's);
#  - never more than 2 trials on one GPU at once, and GPUs were shared (8 trials, 6 GPUs, at once);
#  - dlx report says how the GPUs were shared;
#  - a trials_per_gpu that does not divide the shards is refused at sbatch, with the divisors;
#  - more GPUs a node than any node has is refused at sbatch, with the most there is.
source "$(dirname "$0")/resume_lib.sh"

name=gpu-shards
cat > "$WORK/$name.yaml" <<YAML
name: $name
entrypoint: [/usr/bin/python3, $WORK/$name.py]
seed: 9
hyperparameters:
  lr: {type: double, minval: 0.01, maxval: 1}
searcher: {name: random, metric: loss, max_trials: 8, max_concurrent_trials: 8, max_length: {batches: 1}}
resources: {gpus_per_node: 1, trials_per_gpu: 2, shards_per_gpu: 4}
YAML
cat > "$WORK/$name.py" <<'PY'
import json, os, time
import dlx
trial = dlx.Trial()
start = time.time()
time.sleep(6)
record = {name: os.environ.get(name) for name in ("SLURM_ARRAY_TASK_ID", "SLURMD_NODENAME", "CUDA_VISIBLE_DEVICES",
                                                  "SLURM_SHARDS_ON_NODE", "DLX_GPU_MEMORY_FRACTION")}
record.update(trial=trial.id, start=start, end=time.time())
with open(os.path.join(os.path.dirname(trial.checkpoint_dir), "shard.json"), "w") as f:
    json.dump(record, f)
trial.report_validation(1, loss=trial.hparam("lr"))
trial.finish()
PY
cat > "$WORK/$name.sh" <<'SH'
#!/bin/bash
srun dlx-launch
SH
chmod a+rx "$WORK/$name.sh"
chmod a+r "$WORK/$name.yaml" "$WORK/$name.py"

sharing="each trial asks for 2 of a GPU's 4 shards (--gres=shard:2, resources.shards_per_gpu): Slurm places up to 2 trials on one GPU"
expect_contains "dlx plan" "$(as_user dlx plan "$name.yaml")" "$sharing"
job=$(submit_trial "$name")
expect_contains "sbatch" "$(cat "$WORK/$name.sbatch.err")" "$sharing"
expect_contains "the job's request" "$(scontrol show job "$job" | grep -i -E 'TresPerNode|Gres')" "shard:2"
wait_for_job "$job" 300
dir=$(readlink "$(user_storage)/.jobs/$job")
/usr/bin/python3 - "$dir" <<'PY'
import json, sys
import h5py
directory = sys.argv[1]
runs = []
for trial in range(8):
    with h5py.File(f"{directory}/trials/{trial}/trial.h5", "r") as f:
        state = f.attrs["state"]
        assert (state.decode() if isinstance(state, bytes) else state) == "completed", (trial, state)
    run = json.load(open(f"{directory}/trials/{trial}/shard.json"))
    assert int(run["SLURM_ARRAY_TASK_ID"]) == trial, run  # one trial per array task
    assert run["CUDA_VISIBLE_DEVICES"] in ("0", "1"), run
    assert run["SLURM_SHARDS_ON_NODE"] == "2", run
    assert run["DLX_GPU_MEMORY_FRACTION"] == "0.5", run
    runs.append(run)
gpu = lambda run: (run["SLURMD_NODENAME"], run["CUDA_VISIBLE_DEVICES"])
most, shared = 0, set()
for run in runs:  # at each trial's start: the trials then running on its GPU
    on_gpu = [other for other in runs if gpu(other) == gpu(run) and other["start"] <= run["start"] < other["end"]]
    most = max(most, len(on_gpu))
    if len(on_gpu) == 2:
        shared.add(gpu(run))
assert most <= 2, f"{most} trials on one GPU at once: {runs}"
assert shared, f"no GPU ran two trials at once: {runs}"
print(f"# 8 trials, each its own array task with 2 of a GPU's 4 shards and memory fraction 0.5; at most {most} "
      f"on a GPU at once; shared: {sorted(shared)}")
PY

# The report says how the trials shared the GPUs.
report=$(as_user dlx report "$job" --output "$WORK/$name.html" 2>&1) || fail "dlx report failed: $report"
grep -q "\"gpu_sharing\":\"$sharing" "$WORK/$name.html" || fail "the report's model lacks gpu_sharing: $sharing"

# Refused at sbatch: 3 trials per GPU do not divide 4 shards.
sed -e 's/trials_per_gpu: 2/trials_per_gpu: 3/' -e "s/^name: $name/name: $name-3/" "$WORK/$name.yaml" > "$WORK/$name-3.yaml"
chmod a+r "$WORK/$name-3.yaml"
if as_user sbatch --dl-experiment="$name-3.yaml" "$name.sh" > "$WORK/$name-3.out" 2>&1; then
  fail "sbatch accepted trials_per_gpu 3 on 4 shards: $(cat "$WORK/$name-3.out")"
fi
expect_contains "sbatch's refusal" "$(cat "$WORK/$name-3.out")" \
  "resources.trials_per_gpu: shares each GPU among 3 trials, which does not divide its 4 shards"
expect_contains "sbatch's refusal" "$(cat "$WORK/$name-3.out")" "use a divisor of 4: 1, 2, 4"

# Refused at sbatch: 3 GPUs a node, where the most any node has is 2; Slurm refuses it too.
cat > "$WORK/$name-gpus3.yaml" <<YAML
name: $name-gpus3
entrypoint: [/usr/bin/python3, $WORK/$name.py]
searcher: {name: single, metric: loss, max_length: {batches: 1}}
resources: {gpus_per_node: 3}
YAML
chmod a+r "$WORK/$name-gpus3.yaml"
if as_user sbatch --dl-experiment="$name-gpus3.yaml" "$name.sh" > "$WORK/$name-gpus3.out" 2>&1; then
  fail "sbatch accepted 3 GPUs a node on nodes of 2: $(cat "$WORK/$name-gpus3.out")"
fi
expect_contains "sbatch's refusal" "$(cat "$WORK/$name-gpus3.out")" \
  "resources.gpus_per_node: 3 asks for 3 GPUs on each node, but the most one node of this cluster has is 2 (n1): use \
gpus_per_node: 2 or fewer; a trial of more GPUs spans nodes (nodes_per_trial) (nothing was submitted)"
[ ! -e "$(user_storage)/$name-gpus3" ] || fail "the refused experiment left $(user_storage)/$name-gpus3"
as_user dlx validate "$name.yaml" > /dev/null || fail "dlx validate refused $name.yaml, which this cluster ran"
if as_user dlx validate "$name-gpus3.yaml" > "$WORK/$name-gpus3.out" 2>&1; then
  fail "dlx validate passed 3 GPUs a node on nodes of 2: $(cat "$WORK/$name-gpus3.out")"
fi
expect_contains "dlx validate" "$(cat "$WORK/$name-gpus3.out")" "sbatch refuses it on this cluster: \
resources.gpus_per_node: 3 asks for 3 GPUs on each node, but the most one node of this cluster has is 2 (n1)"
if as_user sbatch --gpus-per-node=3 --wrap true > "$WORK/$name-gpus3.out" 2>&1; then
  fail "Slurm took 3 GPUs a node on nodes of 2: $(cat "$WORK/$name-gpus3.out")"
fi
note "GPUs shared through gres/shard: 8 trials, 2 shards each, at most 2 per GPU; trials_per_gpu 3 and 3 GPUs a node refused"
