#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A plugin built for another Slurm release (docs/admin-guide.md, section 11, "What a Slurm release mismatch does"), with the copies
# of tests/plugin/CMakeLists.txt: jobs without --dl-experiment keep running, and --dl-experiment is
# refused with a line that says what to do.
#   dlx_spank_other_release.so  plugin_version names another release: Slurm refuses the plugin when
#                               it loads it, before any dlx code runs. `optional`: plain jobs run,
#                               sbatch does not know --dl-experiment. `required`: every job fails.
#   dlx_spank_forced_load.so    gets past Slurm's comparison (plugin_version names this release)
#                               but was built for another: dlx's own check refuses --dl-experiment
#                               in sbatch and, on a node, in slurmstepd (the slurmd log, the job's
#                               output, dlx-launch); slurmd says it once when it starts.
# The plugstack.conf that slurmstepd and sbatch read per step and per submission is swapped for
# the test and put back at the end. Usage: slurm_release_test.sh OTHER_RELEASE.so FORCED_LOAD.so
source "$(dirname "$0")/lib.sh"

plugstack=$CLUSTER/etc/plugstack.conf
here=$DLX_TEST_STATE/slurm-release
rm -rf "$here"
mkdir -p "$here"
cp "$1" "$here/other_release.so"
cp "$2" "$here/forced_load.so"
chmod -R a+rX "$here"
cp -p "$plugstack" "$here/plugstack.conf.saved"
manual_slurmd=""
restore() {  # the cluster as the fixture made it: its plugstack.conf, its own slurmd n1
  cp -p "$here/plugstack.conf.saved" "$plugstack"
  if [ -n "$manual_slurmd" ]; then
    kill "$manual_slurmd" 2> /dev/null || true
    wait "$manual_slurmd" 2> /dev/null || true
    "$PREFIX/bin/dlx" cluster up --state-dir "$CLUSTER" > /dev/null
  fi
}
trap restore EXIT
running=$(sbatch --version | awk '{split($2, v, "."); print v[1] "." v[2]}')

use_plugin() {  # use_plugin required|optional FILE: the plugstack line, as dlx cluster writes it
  echo "$1 $2 storage_root=$(storage_root)" > "$plugstack"
}

# A plain job: accepted, runs, ends COMPLETED with its output. $1 names the case.
plain_job_runs() {
  local out=plain-$RANDOM.out submitted job state
  submitted=$(as_user sbatch --parsable --wait --output="$out" --wrap 'echo plain job ran' 2> "$WORK/plain.err") ||
    fail "$1: a plain job was refused: $(cat "$WORK/plain.err")"
  job=$(job_id_of "$submitted")
  wait_for_job "$job" 60
  expect_contains "$1: the plain job's output" "$(cat "$WORK/$out")" "plain job ran"
  state=$(scontrol show job "$job" | grep -o 'JobState=[A-Z]*' || true)
  [ -z "$state" ] || [ "$state" = JobState=COMPLETED ] || fail "$1: the plain job ended $state"
  if grep -q "dlx:" "$WORK/plain.err" "$WORK/$out"; then
    fail "$1: a plain job got a dlx message: $(cat "$WORK/plain.err" "$WORK/$out")"
  fi
}

# sbatch --dl-experiment fails; its stderr is printed for the caller to check.
dlx_job_refused() {
  if as_user sbatch --parsable --array=0 --dl-experiment=examples/grid.yaml examples/job.sh \
      > "$WORK/dlx.out" 2> "$WORK/dlx.err"; then
    fail "$1: sbatch --dl-experiment was accepted: $(cat "$WORK/dlx.out")"
  fi
  cat "$WORK/dlx.err"
}

# What the nodes' slurmd logs (slurmstepd writes there too) got since the test began.
declare -A log_offset
for log in "$CLUSTER"/log/slurmd-n*.log; do log_offset[$log]=$(stat -c %s "$log"); done
new_node_log() {
  local log
  for log in "$CLUSTER"/log/slurmd-n*.log; do tail -c +"$((${log_offset[$log]:-0} + 1))" "$log"; done
}

# 1. Another release, `optional`: Slurm skips the plugin; plain jobs run; --dl-experiment unknown.
use_plugin optional "$here/other_release.so"
plain_job_runs "other release, optional"
refused=$(dlx_job_refused "other release, optional" | grep -m1 unrecognized || true)
expect_contains "sbatch with a plugin of another release (optional)" "$refused" "unrecognized option '--dl-experiment"
grep -q "Incompatible Slurm plugin $here/other_release.so version" <<< "$(new_node_log)" ||
  fail "no 'Incompatible Slurm plugin' line in the slurmd logs: $(new_node_log | tail -5)"
note "another release, optional: plain jobs run; $refused"

# 2. Another release, `required`: Slurm refuses every job, plain ones too (why dlx's snippet says
#    `optional`: docs/admin-guide.md).
use_plugin required "$here/other_release.so"
if as_user sbatch --parsable --wrap true > "$WORK/req.out" 2> "$WORK/req.err"; then
  fail "a plain job was accepted with a required plugin of another release (Slurm changed: update docs/admin-guide.md)"
fi
expect_contains "sbatch with a required plugin of another release" "$(cat "$WORK/req.err")" "Failed to load plugin"
note "another release, required: every sbatch fails: $(grep -m1 . "$WORK/req.err")"

# 3. Past Slurm's comparison, `required` (as dlx cluster writes it): dlx refuses --dl-experiment.
use_plugin required "$here/forced_load.so"
plain_job_runs "forced load"
refused=$(dlx_job_refused "forced load")
expect_contains "sbatch --dl-experiment under another release" "$refused" \
  "dlx: this plugin was built for Slurm "
expect_contains "sbatch --dl-experiment under another release" "$refused" \
  ", but this is Slurm $running: rebuild/reinstall slurm-spank-plugin-dlx for this Slurm"
note "forced load: sbatch says: $(grep -m1 'dlx:' <<<"$refused")"

# 4. The same on a node: submitted through a plugstack with the right plugin (another submit
#    host's), run where slurmstepd loads the forced copy. The step runs, says why in the slurmd log
#    and the job's output, and dlx-launch does not start the trial.
sed "s|^PlugStackConfig=.*|PlugStackConfig=$here/submit-plugstack.conf|" "$SLURM_CONF" > "$here/submit.conf"
cp -p "$here/plugstack.conf.saved" "$here/submit-plugstack.conf"
chmod a+r "$here/submit.conf" "$here/submit-plugstack.conf"
submitted=$(SLURM_CONF=$here/submit.conf as_user sbatch --parsable --array=0 --output=release-%A_%a.out \
  --dl-experiment=examples/grid.yaml examples/job.sh)
job=$(job_id_of "$submitted")
wait_for_job "$job" 120
output=$(cat "$WORK/release-${job}_0.out")
expect_contains "the refused trial's output" "$output" "dlx: this plugin was built for Slurm "
expect_contains "the refused trial's output" "$output" "dlx-launch: not running the trial: the dlx plugin refused it"
grep -q "dlx: this plugin was built for Slurm .*, but this is Slurm $running: rebuild/reinstall" <<< "$(new_node_log)" ||
  fail "no dlx line in the slurmd logs: $(new_node_log | tail -5)"
note "forced load on a node: slurmd log: $(new_node_log | grep -m1 -o 'dlx: this plugin.*')"

# 5. slurmd itself started with the forced copy (slurmd n1, restarted): the line once in its log
#    when it starts, and the node still runs plain jobs. restore() gives the fixture its n1 back.
fixture_slurmd=$(cat "$CLUSTER/run/slurmd-n1.pid")
kill "$fixture_slurmd"
for _ in $(seq 50); do kill -0 "$fixture_slurmd" 2> /dev/null || break; sleep 0.2; done
started_at=$(stat -c %s "$CLUSTER/log/slurmd-n1.log")
setsid slurmd -D -N n1 -f "$SLURM_CONF" < /dev/null > "$here/slurmd-n1.out" 2>&1 &
manual_slurmd=$!
for _ in $(seq 150); do grep -q "slurmd started on" "$here/slurmd-n1.out" && break; sleep 0.2; done
grep -q "slurmd started on" "$here/slurmd-n1.out" || fail "slurmd n1 did not start: $(tail -3 "$here/slurmd-n1.out")"
started_log=$(tail -c +"$((started_at + 1))" "$CLUSTER/log/slurmd-n1.log")
expect_contains "slurmd n1's log at start" "$started_log" \
  "error: dlx: this plugin was built for Slurm "
for _ in $(seq 100); do [ "$(sinfo -h -n n1 -o %t)" = idle ] && break; sleep 0.2; done
submitted=$(as_user sbatch --parsable --wait -w n1 --output=n1.out --wrap 'echo plain job ran on n1')
expect_contains "a plain job on the restarted n1" "$(cat "$WORK/n1.out")" "plain job ran on n1"
note "slurmd start: $(grep -m1 -o 'dlx: this plugin.*' <<<"$started_log")"
