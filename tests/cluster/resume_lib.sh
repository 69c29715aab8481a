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

# write_resume_experiment NAME [EXTRA_YAML]: $WORK/NAME.yaml and $WORK/NAME.sh (TCP between the
# single-host "nodes", as in launcher_two_by_two_test.sh).
write_resume_experiment() {
  local name=$1 extra=${2:-}
  cat > "$WORK/$name.yaml" <<YAML
name: $name
entrypoint: [dlx-example-logreg]
seed: 5
hyperparameters: $RESUME_HPARAMS
searcher: {name: single, metric: accuracy, smaller_is_better: false}
resources: {nodes_per_trial: 2, tasks_per_node: 1, partition: low}
checkpoint: {period: {batches: 500}, keep_latest: 3, keep_best: 1}
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
  /usr/bin/python3 - "$@" <<'PY'
import glob, re, sys, h5py, numpy as np
ref, got, notices, crashes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def final(d):
    files = glob.glob(d + "/checkpoints/step-*.h5")
    return max(files, key=lambda f: int(re.search(r"step-(\d+)\.h5$", f).group(1)))
def tensors(path):
    out = {}
    with h5py.File(path, "r") as f:
        f["tensors"].visititems(lambda n, o: out.update({n: o[()].tobytes()}) if isinstance(o, h5py.Dataset) else None)
        return int(f.attrs["step"]), out
(rs, rt), (gs, gt) = tensors(final(ref)), tensors(final(got))
assert rs == gs, f"final steps differ: {rs} vs {gs}"
assert rt.keys() == gt.keys(), (sorted(rt), sorted(gt))
bad = [n for n in rt if rt[n] != gt[n]]
assert not bad, f"tensors differ from the uninterrupted run: {bad}"
text = lambda v: v.decode() if isinstance(v, bytes) else v
with h5py.File(ref + "/trial.h5", "r") as a, h5py.File(got + "/trial.h5", "r") as b:
    assert text(b.attrs["state"]) == "completed", text(b.attrs["state"])
    for table in ("training", "validation"):
        for name in a["metrics/" + table]:
            x, y = a[f"metrics/{table}/{name}"][:], b[f"metrics/{table}/{name}"][:]
            assert x.shape == y.shape and np.array_equal(x, y), f"{table}/{name} differs: {x} vs {y}"
    events = [dict(b["restart_events"][k].attrs) for k in sorted(b["restart_events"], key=int)] if "restart_events" in b else []
    causes = [text(e["cause"]) for e in events]
    for e in events:
        print("#   restart:", {k: text(v) for k, v in e.items()})
    assert causes.count("notice") == notices and causes.count("crash") == crashes, causes
    assert int(b.attrs["failures"]) == crashes, b.attrs["failures"]
print(f"# identical to the uninterrupted run: final step {gs}, {len(gt)} tensors; restarts {causes}")
PY
}

# reference_trial NAME: sets REFERENCE to the trial directory of an uninterrupted run of
# $WORK/NAME.yaml. The bytes depend on the hyperparameters and the world size only (not on the
# experiment's name or max_restarts), so tests with the same RESUME_HPARAMS share one reference
# run per cluster (its directory cached in $WORK/reference-<hash>); the first test runs it.
reference_trial() {
  local name=$1 key cache job
  key=$(printf '%s\n' "$RESUME_HPARAMS" "$(grep '^resources:' "$WORK/$name.yaml")" | sha1sum | cut -c1-12)
  cache=$WORK/reference-$key
  if [ -s "$cache" ] && [ -e "$(cat "$cache")/trial.h5" ]; then
    REFERENCE=$(cat "$cache")
    note "reference run (shared with an earlier test): $REFERENCE"
    return
  fi
  job=$(submit_trial "$name" --wait) || fail "the reference run of $name failed: $(tail -n 5 "$WORK/$name"-*.out)"
  REFERENCE=$(trial_dir "$job")
  /usr/bin/python3 -c "import h5py,sys; f=h5py.File(sys.argv[1]+'/trial.h5','r'); sys.exit(f.attrs['state'] not in (b'completed','completed'))" "$REFERENCE" ||
    fail "the reference run $job did not complete: $(tail -n 5 "$WORK/$name-${job}_0.out")"
  echo "$REFERENCE" > "$cache"
  note "reference run $job done: $REFERENCE"
}

# trainer_pid JOB RANK: the pid of rank RANK's trainer of array job JOB, from the node's process
# list (comm and environment in /proc; all "nodes" of the local cluster are this host). Fails
# unless exactly one matches.
trainer_pid() {
  local job=$1 rank=$2 p found=()
  for p in /proc/[0-9]*; do
    [ "$(cat "$p/comm" 2>/dev/null)" = dlx-example-log ] || continue  # comm: 15 characters
    if tr '\0' '\n' < "$p/environ" 2>/dev/null | grep -qx "SLURM_ARRAY_JOB_ID=$job" &&
       tr '\0' '\n' < "$p/environ" 2>/dev/null | grep -qx "SLURM_PROCID=$rank"; then
      found+=("${p#/proc/}")
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

# start_fault_trial NAME: the fault tests' common start: the fault-test trial (max_restarts 1)
# with its reference run, submitted and running, a checkpoint or more to come. Sets `job` and
# `dir` (the trial directory) and cancels the job when the test exits, so a failed test leaves no
# trial behind.
start_fault_trial() {
  local name=$1
  RESUME_HPARAMS=$FAULT_HPARAMS
  write_resume_experiment "$name" "max_restarts: 1"
  reference_trial "$name"
  job=$(submit_trial "$name")
  trap 'scancel "$job" 2> /dev/null || true' EXIT
  wait_until 60 "trial $job to start" job_running "$job"
  wait_until 30 "the job link" test -L "$(user_storage)/.jobs/$job"
  dir=$(trial_dir "$job")
}
