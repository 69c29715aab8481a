#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A bad experiment file (torchrun as the entrypoint among them), a conflicting --array, an entrypoint script the code snapshot lacks (or
# holds without the executable bit it is run by), what only the site may allow (CUDA MPS) or GPUs
# on this cluster without any (gpus_per_node, Determined's slots_per_trial) fails at sbatch with a
# dlx: message naming the file, line and problem, and leaves no job queued and no directory on
# storage; so does a job Slurm itself refuses (a partition that does not exist) or only tests
# (--test-only): the directory made for it is removed again at sbatch's exit.
source "$(dirname "$0")/lib.sh"

as_user mkdir -p bad
cat > "$WORK/bad/typo.yaml" <<'YAML'
name: typo
entrypoint: dlx-example-logreg
searcher: {name: single, metric: accuracy}
resources:
  nodes_pertrial: 2
YAML
cat > "$WORK/bad/syntax.yaml" <<'YAML'
name: syntax
entrypoint: [dlx-example-logreg
YAML
max_array=$(scontrol show config | awk '/^MaxArraySize/ {print $3}')
cat > "$WORK/bad/too-many.yaml" <<YAML
name: too-many
entrypoint: dlx-example-logreg
hyperparameters: {learning_rate: {type: log, minval: -3, maxval: -1}}
searcher: {name: random, metric: accuracy, max_trials: $((max_array + 1))}
YAML
# 100,000 characters: std::regex's recursion overflowed sbatch's stack on it (SIGSEGV).
cat > "$WORK/bad/long-partition.yaml" <<YAML
name: long-partition
entrypoint: dlx-example-logreg
searcher: {name: single, metric: accuracy}
resources: {partition: $(head -c 100000 /dev/zero | tr '\0' p)}
YAML
# Several mistakes: sbatch lists them all, sorted by line (issue 20).
cat > "$WORK/bad/torchrun.yaml" <<'YAML'
name: torchrun
entrypoint: torchrun --nproc_per_node=2 train.py --epochs 3
searcher: {name: single, metric: accuracy}
YAML
cat > "$WORK/bad/several.yaml" <<'YAML'
name: several
entrypoint: []
searcher: {name: single, metric: accuracy, max_restarts: 2}
resources: {nodes_pertrial: 2}
YAML
# CUDA MPS needs the site's permission (limits: {mps: true}); this cluster's plugin has no site file.
cat > "$WORK/bad/mps.yaml" <<'YAML'
name: mps
entrypoint: dlx-example-logreg
hyperparameters: {learning_rate: {type: log, minval: -3, maxval: -1}}
searcher: {name: random, metric: accuracy, max_trials: 4}
resources: {gpus_per_node: 1, trials_per_gpu: 4, mps: true}
YAML
# An entrypoint script the code snapshot does not hold (a typo): refused at once, with the file
# meant, instead of every trial failing on "can't open file" after waiting in the queue.
as_user git init -q "$WORK/bad/repo"
as_user sh -c "echo 'print(1)' > '$WORK/bad/repo/train.py'"
cat > "$WORK/bad/entry.yaml" <<'YAML'
name: entry
entrypoint: [/usr/bin/python3, trian.py]
searcher: {name: single, metric: loss, max_length: {batches: 4}}
YAML
# A script run as the program itself that is not executable: every trial would exit 126
# ("Permission denied") and be restarted; refused at once with the two fixes.
cat > "$WORK/bad/noexec.yaml" <<'YAML'
name: noexec
entrypoint: ./train.py --lr 0.1
searcher: {name: single, metric: loss, max_length: {batches: 4}}
YAML
# GPUs on a cluster without any (this one): Determined's slots_per_trial counts GPUs, and Slurm's
# own refusal ("Invalid generic resource (gres) specification") came after the directory existed.
cat > "$WORK/bad/gpus.yaml" <<'YAML'
name: gpus
entrypoint: dlx-example-logreg
searcher: {name: single, metric: accuracy}
resources: {gpus_per_node: 1}
YAML
cat > "$WORK/bad/slots.yaml" <<'YAML'
name: slots
entrypoint: dlx-example-logreg
searcher: {name: single, metric: accuracy}
resources: {slots_per_trial: 2}
YAML
chmod -R a+r "$WORK/bad"
chmod 0644 "$WORK/bad/repo/train.py"

dirs_before=$(count_entries "$(user_storage)")
jobs_before=$(squeue -h -u "$DLX_TEST_USER" | wc -l)

check_rejected() {  # check_rejected "expected message" sbatch-arguments...
  local expected=$1
  shift
  if as_user sbatch "$@" examples/job.sh > "$WORK/bad.out" 2> "$WORK/bad.err"; then
    fail "sbatch $* was accepted: $(cat "$WORK/bad.out")"
  fi
  expect_contains "sbatch $*" "$(cat "$WORK/bad.err")" "$expected"
  note "rejected as expected: $(grep 'dlx:' "$WORK/bad.err" | head -1)"
}

check_rejected "dlx: --dl-experiment: bad/typo.yaml:5:3: resources.nodes_pertrial: unknown key in resources (did you mean 'nodes_per_trial'?)" \
  --dl-experiment=bad/typo.yaml
check_rejected "dlx: --dl-experiment: bad/syntax.yaml:3:1: YAML syntax error" --dl-experiment=bad/syntax.yaml
check_rejected "dlx: --dl-experiment: bad/torchrun.yaml:2:13: entrypoint: torchrun starts the ranks itself, but \
dlx-launch already starts one per Slurm task and gives it RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT \
(run the script itself, entrypoint: [python3, train.py, --epochs, 3], with resources: {tasks_per_node: 2} for \
--nproc_per_node=2; dlx-launch starts each process and sets what torchrun would (docs/sdk.md))" \
  --dl-experiment=bad/torchrun.yaml
check_rejected "dlx: --dl-experiment: bad/several.yaml:2:13: entrypoint: must be a non-empty command string or list of arguments" \
  --dl-experiment=bad/several.yaml
expect_contains "sbatch several.yaml" "$(cat "$WORK/bad.err")" "dlx: --dl-experiment: bad/several.yaml:3:44: searcher.max_restarts: unknown key in searcher"
expect_contains "sbatch several.yaml" "$(cat "$WORK/bad.err")" "dlx: --dl-experiment: bad/several.yaml:4:13: resources.nodes_pertrial: unknown key in resources (did you mean 'nodes_per_trial'?)"
check_rejected "dlx: --dl-experiment: bad/missing.yaml: cannot read the experiment file" \
  --dl-experiment=bad/missing.yaml
# More trials than MaxArraySize are no longer refused (tasks run several in turn:
# cluster.array_tasks shows it), so too-many.yaml is not a bad input any more.
check_rejected "dlx: --dl-experiment: --array=0-9 names trial 9 but examples/grid.yaml has 4 trials (0-3)" \
  --array=0-9 --dl-experiment=examples/grid.yaml
check_rejected "dlx: --dl-experiment: bad/long-partition.yaml:4:24: resources.partition: is 100000 characters long, more than the limit of 255" \
  --dl-experiment=bad/long-partition.yaml
check_rejected "dlx: --dl-experiment: bad/mps.yaml: resources.mps: asks for CUDA MPS, which this cluster does not allow (its dlx plugin has no site file with limits: {mps: true})" \
  --dl-experiment=bad/mps.yaml
check_rejected "dlx: --dl-experiment: bad/entry.yaml: the entrypoint runs trian.py, which is not in the code snapshot of $WORK/bad/repo: did you mean train.py? (nothing was submitted)" \
  --chdir=bad/repo --dl-experiment=bad/entry.yaml
check_rejected "dlx: --dl-experiment: bad/noexec.yaml: the entrypoint runs ./train.py as a program, but the code snapshot's train.py is not executable (mode 0644), so every trial would fail with \"Permission denied\": name its interpreter first (entrypoint: [python3, train.py]), or make it executable (chmod +x, and git add it: git keeps the bit) (nothing was submitted)" \
  --chdir=bad/repo --dl-experiment=bad/noexec.yaml
# An index past 64 bits: a dlx message naming it (it was "dlx: init_post_opt: stol").
check_rejected "dlx: --dl-experiment: --array=99999999999999999999 names trial 99999999999999999999 but examples/grid.yaml has 4 trials (0-3)" \
  --array=99999999999999999999 --dl-experiment=examples/grid.yaml
check_rejected "dlx: --dl-experiment: bad/gpus.yaml: resources.gpus_per_node: 1 asks for 1 GPU on each node, but no \
node of this cluster has a GPU: remove gpus_per_node for a CPU trial (resources: {tasks_per_node: N} for N processes), \
or submit to a cluster with GPUs (nothing was submitted)" --dl-experiment=bad/gpus.yaml
check_rejected "dlx: --dl-experiment: bad/slots.yaml: resources.slots_per_trial: 2 asks for 2 GPUs on one node, but \
no node of this cluster has a GPU: dlx reads slots as GPUs: use slots_per_trial: 0 for a CPU trial, or resources: \
{tasks_per_node: N} for N CPU processes (nothing was submitted)" --dl-experiment=bad/slots.yaml
# dlx validate says the same as sbatch: the file is valid, and this cluster refuses it.
if as_user dlx validate bad/gpus.yaml > "$WORK/bad.out" 2> "$WORK/bad.err"; then
  fail "dlx validate passed bad/gpus.yaml on a cluster without GPUs: $(cat "$WORK/bad.out")"
fi
expect_contains "dlx validate bad/gpus.yaml" "$(cat "$WORK/bad.out")" "bad/gpus.yaml: valid: 1 trial, array 0"
expect_contains "dlx validate bad/gpus.yaml" "$(cat "$WORK/bad.err")" "bad/gpus.yaml: sbatch refuses it on this \
cluster: resources.gpus_per_node: 1 asks for 1 GPU on each node, but no node of this cluster has a GPU"
# dlx plan shows the plan, and says the same on stderr with exit status 1.
if as_user dlx plan bad/gpus.yaml > "$WORK/bad.out" 2> "$WORK/bad.err"; then
  fail "dlx plan passed bad/gpus.yaml on a cluster without GPUs: $(cat "$WORK/bad.err")"
fi
expect_contains "dlx plan bad/gpus.yaml" "$(cat "$WORK/bad.out")" "# sbatch --array=0"
expect_contains "dlx plan bad/gpus.yaml" "$(cat "$WORK/bad.err")" "bad/gpus.yaml: sbatch refuses it on this \
cluster: resources.gpus_per_node: 1 asks for 1 GPU on each node, but no node of this cluster has a GPU"
# The check refuses only what Slurm refuses too.
if as_user sbatch --gpus-per-node=1 --wrap true > "$WORK/bad.out" 2> "$WORK/bad.err"; then
  fail "Slurm took a job asking for a GPU on this cluster without any: $(cat "$WORK/bad.out")"
fi
expect_contains "Slurm's own refusal" "$(cat "$WORK/bad.err")" "Invalid generic resource (gres) specification"
# A user's own GPU option is left to Slurm, which refuses it: the directory made goes again.
check_rejected "dlx: Slurm did not take the job: removed the experiment directory $(user_storage)/gpus" \
  --gpus-per-node=1 --dl-experiment=bad/gpus.yaml
# A valid experiment that Slurm refuses (a partition that does not exist), or does not queue
# (--test-only): the directory made for it is removed at sbatch's exit, and said so.
check_rejected "dlx: Slurm did not take the job: removed the experiment directory $(user_storage)/logreg-grid" \
  --partition=nosuch --dl-experiment=examples/grid.yaml
expect_contains "sbatch --partition=nosuch" "$(cat "$WORK/bad.err")" "Invalid partition name specified"
as_user sbatch --test-only --dl-experiment=examples/grid.yaml examples/job.sh > "$WORK/bad.out" 2> "$WORK/bad.err" ||
  fail "sbatch --test-only failed: $(cat "$WORK/bad.err")"
expect_contains "sbatch --test-only" "$(cat "$WORK/bad.err")" \
  "dlx: --test-only submits nothing: removed the experiment directory $(user_storage)/logreg-grid"

[ "$(count_entries "$(user_storage)")" = "$dirs_before" ] ||
  fail "a rejected submission created something in $(user_storage): $(ls -A "$(user_storage)")"
[ "$(squeue -h -u "$DLX_TEST_USER" | wc -l)" = "$jobs_before" ] || fail "a rejected submission queued a job"
note "bad input rejected, nothing created or queued"
