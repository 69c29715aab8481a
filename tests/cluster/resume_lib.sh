# SPDX-License-Identifier: Apache-2.0
# Helpers for the preempt/requeue/resume cluster tests: a logreg trial on 2 nodes that checkpoints
# every few batches, a reference run of the same trial without interruption, and the comparison of
# their final checkpoints (tensor bytes) and records.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The trial's hyperparameters; a test may set RESUME_HPARAMS (a YAML flow mapping) before
# write_resume_experiment for a longer run or a bigger state (extra_state_mb).
RESUME_HPARAMS=${RESUME_HPARAMS:-"{learning_rate: 0.05, batch_size: 8, epochs: 12, samples: 20000, step_delay_us: 1000}"}
# The rank-kill, kill-during-save and time-limit-chain tests share this trial (and so one
# reference run): 2 epochs of 1000 steps of >= 22 ms, so >= 44 s of training whatever the
# machine (longer than one allocation of a --time=1 job gets after its notice), checkpoints every
# 500 steps of 16 MiB (extra_state_mb) so that a save lasts long enough to be caught.
FAULT_HPARAMS="{learning_rate: 0.05, batch_size: 8, epochs: 2, samples: 20000, step_delay_us: 22000, extra_state_mb: 16}"

# The trainer: the C++ logreg example by default; the PyTorch tests set these to the DDP example
# (RESUME_ENTRYPOINT a YAML flow sequence, TRAINER_COMM the trainer's /proc comm, 15 characters).
RESUME_ENTRYPOINT=${RESUME_ENTRYPOINT:-"[dlx-example-logreg]"}
RESUME_CHECKPOINT=${RESUME_CHECKPOINT:-"{period: {batches: 500}, keep_latest: 3, keep_best: 1}"}
TRAINER_COMM=${TRAINER_COMM:-dlx-example-log}

# write_resume_experiment NAME [EXTRA_YAML]: $WORK/NAME.yaml and $WORK/NAME.sh (TCP between the
# single-host "nodes", as in launcher_two_by_two_test.sh).
write_resume_experiment() {
  local name=$1 extra=${2:-}
  cat > "$WORK/$name.yaml" <<YAML
name: $name
entrypoint: $RESUME_ENTRYPOINT
seed: 5
hyperparameters: $RESUME_HPARAMS
searcher: {name: single, metric: accuracy, smaller_is_better: false}
resources: {nodes_per_trial: 2, tasks_per_node: 1, partition: low}
checkpoint: $RESUME_CHECKPOINT
$extra
YAML
  cat > "$WORK/$name.sh" <<'SH'
#!/bin/bash
export OMPI_MCA_btl=self,tcp
srun --mpi=pmix dlx-launch
rc=$?
echo "dlx-test: srun exited $rc (restart ${SLURM_RESTART_COUNT:-0})"
exit $rc
SH
  chmod a+rx "$WORK/$name.sh"
  chmod a+r "$WORK/$name.yaml"
}

# submit_trial NAME [sbatch args...]: prints the array job id.
submit_trial() {
  local name=$1; shift
  local out
  out=$(as_user sbatch --parsable --open-mode=append --output="$name-%A_%a.out" "$@" \
    --dl-experiment="$name.yaml" "$name.sh" 2> "$WORK/$name.sbatch.err") ||
    fail "sbatch $name failed: $(cat "$WORK/$name.sbatch.err")"
  job_id_of "$out"
}

trial_dir() { echo "$(readlink "$(user_storage)/.jobs/$1")/trials/0"; }

# wait_until SECONDS WHAT COMMAND...: poll COMMAND every 0.5 s.
wait_until() {
  local limit=$1 what=$2; shift 2
  local deadline=$((SECONDS + limit))
  until "$@" 2>/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || fail "timed out after ${limit}s waiting for $what"
    sleep 0.5
  done
}

job_running() { [ "$(squeue -h -j "$1" -t R -o %i | wc -l)" -gt 0 ]; }
# The record's restart count (SLURM_RESTART_COUNT of the latest run) is at least $2.
restarts_at_least() {
  /usr/bin/python3 -c "import h5py,sys; f=h5py.File(sys.argv[1]+'/trial.h5','r'); sys.exit(0 if int(f.attrs['restarts'])>=int(sys.argv[2]) else 1)" "$1" "$2"
}
# A checkpoint with step >= $2 exists in trial dir $1.
checkpoint_past() {
  local f n
  for f in "$1"/checkpoints/step-*.h5; do
    [ -e "$f" ] || continue
    n=${f##*step-}; n=${n%.h5}
    [ "$n" -ge "$2" ] && return 0
  done
  return 1
}

# preempt_now: a job in `high` that needs every node: Slurm requeues the low-partition trial.
preempt_now() {
  as_user sbatch --parsable -p high -N 3 --exclusive -o /dev/null --wrap "sleep 2" > /dev/null
}

# compare_trials REFERENCE_DIR DIR NOTICES CRASHES: final checkpoints byte-identical, the same
# metrics, completed, and the restart history (causes) as expected.
compare_trials() {
  finish_reference_trial
  /usr/bin/python3 "$SOURCE_DIR/tests/tools/compare_checkpoints.py" "$1" "$2" \
    --notices "$3" --crashes "$4" || fail "$2 is not identical to the uninterrupted run $1"
}

# reference_trial NAME: sets REFERENCE to the trial directory of an uninterrupted run of
# $WORK/NAME.yaml, finished. The bytes depend on the hyperparameters and the world size only (not
# on the experiment's name or max_restarts), so tests with the same RESUME_HPARAMS share one
# reference run per cluster (its directory cached in $WORK/reference-<hash>); the first test runs it.
reference_trial() {
  start_reference_trial "$1"
  finish_reference_trial
}

# start_reference_trial NAME: reference_trial without waiting for the run to end: sets REFERENCE
# (and REFERENCE_JOB while the run is still going), so that the reference trains on the spare
# nodes while the test interrupts its own trial (2 of the cluster's 3 nodes, 1 CPU each).
# compare_trials waits for it (finish_reference_trial). Not for a test that preempts: a
# preemption would requeue the reference too.
REFERENCE_JOB=""
reference_key() {
  printf '%s\n' "$RESUME_ENTRYPOINT" "$RESUME_HPARAMS" "$(grep '^resources:' "$WORK/$1.yaml")" | sha1sum | cut -c1-12
}
start_reference_trial() {
  local name=$1 cache
  cache=$WORK/reference-$(reference_key "$name")
  if [ -s "$cache" ] && [ -e "$(cat "$cache")/trial.h5" ]; then
    REFERENCE=$(cat "$cache")
    note "reference run already done (shared by the tests with these hyperparameters): $REFERENCE"
    return
  fi
  REFERENCE_JOB=$(submit_trial "$name")
  REFERENCE_CACHE=$cache
  wait_until 60 "the job link of the reference run $REFERENCE_JOB" test -L "$(user_storage)/.jobs/$REFERENCE_JOB"
  REFERENCE=$(trial_dir "$REFERENCE_JOB")
  note "reference run $REFERENCE_JOB submitted: $REFERENCE"
}

# finish_reference_trial: waits for the reference run started by start_reference_trial (if any),
# checks that it completed uninterrupted (no restart) and caches it for the next tests.
finish_reference_trial() {
  [ -n "$REFERENCE_JOB" ] || return 0
  local job=$REFERENCE_JOB
  wait_for_job "$job" 300
  /usr/bin/python3 -c "import h5py,sys; f=h5py.File(sys.argv[1]+'/trial.h5','r'); sys.exit(f.attrs['state'] not in (b'completed','completed') or int(f.attrs['restarts']) != 0)" "$REFERENCE" ||
    fail "the reference run $job did not complete in one go: $(tail -n 5 "$WORK"/*-"${job}"_0.out)"
  echo "$REFERENCE" > "$REFERENCE_CACHE"
  REFERENCE_JOB=""
  note "reference run $job done: $REFERENCE"
}

# trainer_pid JOB RANK: the pid of rank RANK's trainer of array job JOB, from the node's process
# list (comm and environment in /proc; all "nodes" of the local cluster are this host). Fails
# unless exactly one matches.
trainer_pid() {
  local job=$1 rank=$2 p found=()
  # pgrep reads every process's name in one process (only reading: it signals nothing); a loop
  # that forked cat for each of some hundred processes took seconds on a loaded machine, long
  # enough for the trainer to finish before the test acted on it.
  for p in $(pgrep -x -- "$TRAINER_COMM"); do
    local environment
    environment=$(tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null) || continue
    if grep -qx "SLURM_ARRAY_JOB_ID=$job" <<< "$environment" && grep -qx "SLURM_PROCID=$rank" <<< "$environment"; then
      found+=("$p")
    fi
  done
  [ "${#found[@]}" -eq 1 ] || fail "expected one trainer of job $job rank $rank, found: ${found[*]:-none}"
  echo "${found[0]}"
}

# restart_causes DIR: the causes of the trial's restart events, one per line.
restart_causes() {
  /usr/bin/python3 - "$1" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1] + "/trial.h5", "r") as f:
    if "restart_events" in f:
        for k in sorted(f["restart_events"], key=int):
            c = f["restart_events"][k].attrs["cause"]
            print(c.decode() if isinstance(c, bytes) else c)
PY
}

# latest_checkpoint_step DIR: the highest step of a complete checkpoint in trial dir DIR (0: none).
latest_checkpoint_step() {
  local f n latest=0
  for f in "$1"/checkpoints/step-*.h5; do
    [ -e "$f" ] || continue
    n=${f##*step-}; n=${n%.h5}
    [ "$n" -gt "$latest" ] && latest=$n
  done
  echo "$latest"
}

# restart_attr DIR N KEY: attribute KEY of restart event N of the trial (1, 2, ...).
restart_attr() {
  /usr/bin/python3 - "$@" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1] + "/trial.h5", "r") as f:
    value = f["restart_events"][sys.argv[2]].attrs[sys.argv[3]]
    print(value.decode() if isinstance(value, bytes) else value)
PY
}

# start_resume_trial NAME [EXTRA_YAML [SBATCH_ARGS...]]: the resume tests' common start: the
# experiment (RESUME_HPARAMS, EXTRA_YAML), its reference run started (start_reference_trial) and
# the trial submitted and running. Sets `job` and `dir` (the trial directory) and cancels the
# job (and an unfinished reference run) when the test exits, so a failed test leaves no trial
# behind.
start_resume_trial() {
  local name=$1 extra=${2:-}
  write_resume_experiment "$name" "$extra"
  start_reference_trial "$name"
  job=$(submit_trial "$name" "${@:3}")
  trap 'scancel "$job" $REFERENCE_JOB 2> /dev/null || true' EXIT
  wait_until 60 "trial $job to start" job_running "$job"
  wait_until 30 "the job link" test -L "$(user_storage)/.jobs/$job"
  dir=$(trial_dir "$job")
}

# start_fault_trial NAME [SBATCH_ARGS...]: start_resume_trial for the fault tests' shared trial
# (FAULT_HPARAMS, max_restarts 1), a checkpoint or more to come.
start_fault_trial() {
  RESUME_HPARAMS=$FAULT_HPARAMS
  start_resume_trial "$1" "max_restarts: 1" "${@:2}"
}
