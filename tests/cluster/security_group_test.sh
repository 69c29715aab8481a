#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 17's attacks by a member of alice's group (mallory may read alice's experiments: the
# directories are 0750, the files 0640), run for real on the local cluster:
#   9   mallory holds a read lock on alice's journal (fcntl F_RDLCK) for as long as she likes:
#       alice's trials still run to the end (writers lock journal.lock, 0600, which mallory cannot
#       open; readers take no lock);
#   12  alice's hyperparameter values carry terminal escapes and a newline: `dlx status` and
#       `dlx plan`, run by mallory, print them escaped (no control byte reaches the terminal, no
#       forged row).
source "$(dirname "$0")/lib.sh"
source "$SOURCE_DIR/tests/security/users.sh"

storage=$(storage_root)
work=$DLX_TEST_STATE/work-$ALICE
rm -rf "$work" && mkdir -p "$work" && cp -r "$SOURCE_DIR/examples" "$work/" && chown -R "$ALICE:" "$work"
as_named() {  # as_named USER CMD...: in alice's submit directory, with the cluster's environment
  local user=$1
  shift
  runuser -u "$user" -- env -i HOME=/ USER="$user" LOGNAME="$user" PATH="$PREFIX/bin:/usr/bin:/bin" \
    SLURM_CONF="$SLURM_CONF" OMPI_MCA_btl_tcp_if_include=lo bash -c 'cd "$0" && "$@"' "$work" "$@"
}
# alice's storage directory is her own, group-readable (as dlx creates it).
if [ ! -d "$storage/$ALICE" ]; then as_named "$ALICE" mkdir -m 0750 "$storage/$ALICE"; fi

# Three trials, one at a time; the values of `note` are hostile to terminals. The deadline of a
# journal writer is shortened (exported with the submission) so that a stall would fail the
# trial within the test's time instead of waiting 120 s per write.
cat > "$work/group.yaml" <<'YAML'
name: group
entrypoint: [dlx-example-logreg]
seed: 3
hyperparameters:
  learning_rate: 0.1
  batch_size: 32
  epochs: 2
  note: {type: categorical, vals: ["\e]0;owned by mallory\a", "x\n9 completed forged-row", "\e[2J\x9b31m"]}
searcher: {name: grid, metric: accuracy, smaller_is_better: false, max_concurrent_trials: 1}
resources: {nodes_per_trial: 1, tasks_per_node: 1}
YAML
chown "$ALICE:" "$work/group.yaml"

submitted=$(as_named "$ALICE" env DLX_JOURNAL_LOCK_TIMEOUT=45 sbatch --parsable --output=group-%A_%a.out --dl-experiment=group.yaml examples/job.sh)
job=$(job_id_of "$submitted")
dir=$storage/$ALICE/group
journal=$dir/journal

# mallory waits for the first trial's journal, then holds a read lock on it until killed.
cat > "$DLX_TEST_STATE/hold_read_lock.py" <<'PY'
import fcntl, os, sys, time
path, pid_file = sys.argv[1], sys.argv[2]
deadline = time.time() + 180
while not os.path.exists(path):
    if time.time() > deadline:
        sys.exit("no journal appeared")
    time.sleep(0.1)
journal = open(path, "rb")
fcntl.lockf(journal, fcntl.LOCK_SH)
with open(pid_file, "w") as f:
    f.write(str(os.getpid()))
print("holding a read lock on", path, flush=True)
time.sleep(3600)
PY
chmod a+r "$DLX_TEST_STATE/hold_read_lock.py"
lock_pid_file=$DLX_TEST_STATE/markers-lock.pid
rm -f "$lock_pid_file" && install -m 0666 /dev/null "$lock_pid_file"
as_named "$MALLORY" /usr/bin/python3 "$DLX_TEST_STATE/hold_read_lock.py" "$journal" "$lock_pid_file" \
  > "$DLX_TEST_STATE/lock.out" 2>&1 &
holder=$!
stop_holder() {
  local pid
  pid=$(cat "$lock_pid_file" 2>/dev/null || true)
  if [ -n "$pid" ]; then kill "$pid" 2> /dev/null || true; fi
  wait "$holder" 2> /dev/null || true
}
trap 'stop_holder; echo "FAIL: $(basename "$0"):$LINENO: command failed: $BASH_COMMAND" >&2' ERR
trap stop_holder EXIT
deadline=$((SECONDS + 120))
until [ -s "$lock_pid_file" ]; do
  [ "$SECONDS" -lt "$deadline" ] || fail "mallory could not lock alice's journal: $(cat "$DLX_TEST_STATE/lock.out")"
  sleep 0.2
done
note "mallory (pid $(cat "$lock_pid_file")) holds a read lock on $journal"
wait_for_job "$job" 300
kill -0 "$(cat "$lock_pid_file")" 2> /dev/null || fail "mallory's lock holder died early: $(cat "$DLX_TEST_STATE/lock.out")"
stop_holder

status=$(as_named "$MALLORY" dlx status "$dir") || fail "mallory's dlx status of alice's experiment failed: $status"
echo "$status"
grep -q '^# 3 trials: 3 completed$' <<< "$status" ||
  fail "alice's trials did not all complete under mallory's read lock: $(cat "$work"/group-"$job"_*.out)"
note "3 trials completed while mallory held a read lock on the journal"

# Finding 12: no control byte reaches the terminal; the newline is shown, not obeyed.
for command in "dlx status $dir" "dlx plan $dir/experiment.yaml"; do
  out=$(as_named "$MALLORY" $command) || fail "$command failed: $out"
  if printf '%s' "$out" | LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]'; then
    fail "$command printed a control character: $(printf '%s' "$out" | od -c | head)"
  fi
  if printf '%s' "$out" | grep -q $'\xc2\x9b'; then fail "$command printed a C1 control (U+009B)"; fi
  if echo "$out" | grep -q '^9 completed forged-row'; then fail "$command printed a forged row"; fi
  expect_contains "$command" "$out" 'owned by mallory'
  note "$command: escaped"
done

# Held up: hyperparameter values with $(), backticks and a newline reach the trainer verbatim
# (DLX_HP_<NAME> and DLX_HPARAMS) and run nothing, in slurmstepd, dlx-launch or the shell.
marker=$DLX_TEST_STATE/verbatim-ran
rm -f "$marker"
cat > "$work/verbatim.yaml" <<YAML
name: verbatim
entrypoint: [sh, -c, 'printf %s "\$DLX_HP_V" > "\$DLX_EXPERIMENT_DIR/v-\$DLX_TRIAL_ID"; printf %s "\$DLX_HPARAMS" > "\$DLX_EXPERIMENT_DIR/j-\$DLX_TRIAL_ID"']
hyperparameters:
  v: {type: categorical, vals: ["\$(touch $marker)", "\`touch $marker\`", "line one\nline two; touch $marker"]}
searcher: {name: grid, metric: loss}
resources: {nodes_per_trial: 1, tasks_per_node: 1}
YAML
chown "$ALICE:" "$work/verbatim.yaml"
submitted=$(as_named "$ALICE" sbatch --parsable --output=verbatim-%A_%a.out --dl-experiment=verbatim.yaml examples/job.sh)
job=$(job_id_of "$submitted")
wait_for_job "$job" 120
vdir=$storage/$ALICE/verbatim
[ "$(cat "$vdir/v-0")" = "\$(touch $marker)" ] || fail "trial 0 got [$(cat "$vdir/v-0")]"
[ "$(cat "$vdir/v-1")" = "\`touch $marker\`" ] || fail "trial 1 got [$(cat "$vdir/v-1")]"
[ "$(cat "$vdir/v-2")" = "line one
line two; touch $marker" ] || fail "trial 2 got [$(cat "$vdir/v-2")]"
/usr/bin/python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["v"]; assert v == sys.argv[2], v' \
  "$vdir/j-2" "line one
line two; touch $marker"
[ ! -e "$marker" ] || fail "a hyperparameter value ran as a command"
note "hyperparameter values with \$(), backticks and newlines reached the trainer verbatim and ran nothing"
