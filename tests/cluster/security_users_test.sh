#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 17's attacks between two users of one cluster, run for real: alice submits with sbatch
# --dl-experiment, mallory (a member of alice's group) attacks. Each attack must end in a refusal
# with a dlx: message, and nothing of mallory's may run as alice.
#   1  storage-root squatting: <root>/alice made by mallory before alice's first submission, or
#      a link in its place: sbatch refuses, nothing is queued or created;
#   1  a directory swapped after submission (a storage root that lost its sticky bit): the step's
#      slurmstepd refuses the experiment, mallory's entrypoint never runs, the node stays usable;
#   3  a FIFO in the snapshot's place (made by the job script): the step fails at once, slurmstepd
#      does not hang, and the next user's job runs on the same node;
#   held up: slurmstepd reads the experiment as the job's user, never as root.
#   4  a job named after alice's experiment: mallory's job of the same name never stands for
#      alice's experiment in alice's `dlx status DIR`, and her own job id never leads mallory to
#      alice's experiment (the lookup by name asks Slurm for the user's own jobs only).
source "$(dirname "$0")/lib.sh"
source "$SOURCE_DIR/tests/security/users.sh"

storage=$(storage_root)
# Each user's submit directory, with the examples (job.sh) in it.
for u in "$ALICE" "$MALLORY"; do
  rm -rf "${DLX_TEST_STATE:?}/work-$u"
  mkdir -p "$DLX_TEST_STATE/work-$u"
  cp -r "$SOURCE_DIR/examples" "$DLX_TEST_STATE/work-$u/"
  chown -R "$u:" "$DLX_TEST_STATE/work-$u"
done
rm -rf "${storage:?}/$ALICE" "${storage:?}/$MALLORY" "$storage/$ALICE.moved"
marker_dir=$DLX_TEST_STATE/markers
rm -rf "$marker_dir" && install -d -m 1777 "$marker_dir"
# On any exit, the storage root as the other tests expect it: sticky again, and alice's own
# directory back in its place (a failure after the swap left mallory's there, and every later
# test's submissions as alice were refused).
restore_storage() {
  chmod 1777 "$storage"
  if [ -d "$storage/$ALICE.moved" ]; then
    rm -rf "${storage:?}/$ALICE"
    mv "$storage/$ALICE.moved" "$storage/$ALICE"
  fi
  [ "$(stat -c %U "$storage/$ALICE" 2> /dev/null || echo "$ALICE")" = "$ALICE" ] || rm -rf "${storage:?}/$ALICE"
}
trap 'restore_storage; echo "FAIL: $(basename "$0"):$LINENO: command failed: $BASH_COMMAND" >&2' ERR
trap restore_storage EXIT

as_named() {  # as_named USER CMD...: like lib.sh's as_user, for USER in their own submit directory
  local user=$1 work=$DLX_TEST_STATE/work-$1
  shift
  runuser -u "$user" -- env -i HOME="$work" USER="$user" LOGNAME="$user" PATH="$PREFIX/bin:/usr/bin:/bin" \
    SLURM_CONF="$SLURM_CONF" OMPI_MCA_btl_tcp_if_include=lo bash -c 'cd "$0" && "$@"' "$work" "$@"
}
write_experiment() {  # write_experiment USER FILE NAME ENTRYPOINT
  printf 'name: %s\nentrypoint: %s\nsearcher: {name: single, metric: accuracy}\nresources: {nodes_per_trial: 1, tasks_per_node: 1}\n' \
    "$3" "$4" | as_named "$1" tee "$DLX_TEST_STATE/work-$1/$2" > /dev/null
}
node_states() { sinfo -h -N -o '%N %t' | sort -u | paste -sd ' '; }
# No node left COMPLETING, drained or down by the refused job within $1 seconds: either would keep
# it from other users. Nodes busy with other jobs are fine (only idle, mixed and allocated pass).
wait_nodes_released() {
  local deadline=$((SECONDS + $1))
  while sinfo -h -N -o '%t' | grep -qvE '^(idle|mix|alloc)$'; do
    [ "$SECONDS" -lt "$deadline" ] || fail "nodes not released $1 s after the job ended: $(node_states)"
    sleep 0.5
  done
}

# ---- 1: squatting, before alice's first submission.
write_experiment "$ALICE" exp.yaml squat "'touch $marker_dir/alice-ran'"
as_named "$MALLORY" mkdir -m 0777 "$storage/$ALICE"
if out=$(as_named "$ALICE" sbatch --parsable --dl-experiment=exp.yaml examples/job.sh 2>&1); then
  fail "alice's submission into mallory's $storage/$ALICE was accepted: $out"
fi
expect_contains "squatted user directory" "$out" \
  "dlx: --dl-experiment: refusing to create the experiment there: $storage/$ALICE is owned by $MALLORY, not by $ALICE"
[ -z "$(ls -A "$storage/$ALICE")" ] || fail "a refused submission created $(ls -A "$storage/$ALICE")"
queued=$(squeue -h -u "$ALICE" -o '%i %j %T %V')
[ -z "$queued" ] || fail "a refused submission queued a job (squeue: $queued)"
note "squatted directory refused: $(echo "$out" | grep 'dlx:' | head -1)"
rmdir "$storage/$ALICE"
as_named "$MALLORY" mkdir -p -m 0755 "$storage/$MALLORY/bait"
as_named "$MALLORY" ln -s "$storage/$MALLORY/bait" "$storage/$ALICE"
if out=$(as_named "$ALICE" sbatch --parsable --dl-experiment=exp.yaml examples/job.sh 2>&1); then
  fail "alice's submission through mallory's link was accepted: $out"
fi
expect_contains "linked user directory" "$out" "dlx: --dl-experiment: refusing to create the experiment there: $storage/$ALICE is a symbolic link"
[ -z "$(ls -A "$storage/$MALLORY/bait")" ] || fail "a refused submission created something in mallory's directory"
rm "$storage/$ALICE"
note "linked user directory refused"

# ---- 1: swapped after submission. The storage root loses its sticky bit (an administrator's
# mistake) while two of alice's jobs wait; mallory moves alice's directory aside and puts her own,
# with experiments of the same names whose entrypoint leaves a marker. slurmstepd refuses both:
# the first while the root is still writable by all, the second after the administrator has
# restored the sticky bit (mallory's directory is still in alice's place).
write_experiment "$ALICE" swap1.yaml swap1 "'id -un > $marker_dir/swap-ran'"
write_experiment "$ALICE" swap2.yaml swap2 "'id -un > $marker_dir/swap-ran'"
jobs=()
for n in 1 2; do
  submitted=$(as_named "$ALICE" sbatch --parsable --hold --output=swap-%A_%a.out --dl-experiment=swap$n.yaml examples/job.sh)
  jobs+=("$(job_id_of "$submitted")")
  [ -d "$storage/$ALICE/swap$n" ] || fail "alice's experiment directory swap$n was not created"
done
chmod 0777 "$storage"
as_named "$MALLORY" mv "$storage/$ALICE" "$storage/$ALICE.moved"
as_named "$MALLORY" mkdir -m 0777 "$storage/$ALICE"
for n in 1 2; do
  as_named "$MALLORY" mkdir -m 0777 "$storage/$ALICE/swap$n" "$storage/$ALICE/swap$n/trials"
  write_experiment "$MALLORY" swap$n.yaml swap$n "'id -un > $marker_dir/swap-ran'"
  as_named "$MALLORY" cp "$DLX_TEST_STATE/work-$MALLORY/swap$n.yaml" "$storage/$ALICE/swap$n/experiment.yaml"
  as_named "$MALLORY" chmod 0666 "$storage/$ALICE/swap$n/experiment.yaml"
done
# What the step said: the job's output file, or slurmd's log when the step never started.
step_messages() {  # step_messages JOB EXPERIMENT
  cat "$DLX_TEST_STATE/work-$ALICE/swap-${1}_0.out" 2>/dev/null || true
  grep -h "dlx:" "$CLUSTER"/log/slurmd-n*.log | grep -F "$2" | tail -2 || true
}
expected=("$storage (mode 0777) is writable by its group and all users without the sticky bit"
          "$storage/$ALICE is owned by $MALLORY, not by $ALICE or root")
for n in 1 2; do
  [ "$n" = 1 ] || chmod 1777 "$storage"  # the administrator restores the sticky bit
  job=${jobs[$((n - 1))]}
  scontrol release "$job"
  wait_for_job "$job" 120
  [ ! -e "$marker_dir/swap-ran" ] || fail "mallory's entrypoint ran as $(cat "$marker_dir/swap-ran")"
  messages=$(step_messages "$job" "$storage/$ALICE/swap$n")
  expect_contains "the swapped experiment swap$n" "$messages" "${expected[$((n - 1))]}"
  note "swapped directory refused by slurmstepd (job $job): $(echo "$messages" | grep -o 'dlx: .*' | head -1)"
  wait_nodes_released 60
  [ -z "$(sinfo -h -R)" ] || fail "a node was drained by the refusal: $(sinfo -R)"
done
rm -rf "${storage:?}/$ALICE"
mv "$storage/$ALICE.moved" "$storage/$ALICE"

# ---- held up: slurmstepd reads the experiment as the job's user, never as root. A snapshot its
# owner cannot read (mode 0000; root could) must be refused with EACCES.
write_experiment "$ALICE" unreadable.yaml unreadable "'id -un > $marker_dir/unreadable-ran'"
submitted=$(as_named "$ALICE" sbatch --parsable --hold --output=unreadable-%A_%a.out --dl-experiment=unreadable.yaml examples/job.sh)
job=$(job_id_of "$submitted")
as_named "$ALICE" chmod 0000 "$storage/$ALICE/unreadable/experiment.yaml"
scontrol release "$job"
wait_for_job "$job" 90
[ ! -e "$marker_dir/unreadable-ran" ] || fail "a snapshot its owner cannot read was run: slurmstepd read it as root"
expect_contains "unreadable snapshot" "$(cat "$DLX_TEST_STATE/work-$ALICE/unreadable-${job}_0.out")" \
  "cannot open $storage/$ALICE/unreadable/experiment.yaml: Permission denied"
note "the snapshot is read as the user: an unreadable one is refused with EACCES"
wait_nodes_released 30

# ---- 3: a FIFO in the snapshot's place, made by the job script before srun: the step's
# user_init must refuse at once (a blocking open left the node COMPLETING for minutes).
write_experiment "$ALICE" fifo.yaml fifo "'true'"
cat > "$DLX_TEST_STATE/work-$ALICE/fifo-job.sh" <<'SH'
#!/bin/bash
rm "$DLX_EXPERIMENT_DIR/experiment.yaml"
mkfifo "$DLX_EXPERIMENT_DIR/experiment.yaml"
srun --mpi=pmix dlx-launch
SH
chown "$ALICE" "$DLX_TEST_STATE/work-$ALICE/fifo-job.sh"
submitted=$(as_named "$ALICE" sbatch --parsable --output=fifo-%A_%a.out --dl-experiment=fifo.yaml fifo-job.sh)
job=$(job_id_of "$submitted")
wait_for_job "$job" 90
output=$(cat "$DLX_TEST_STATE/work-$ALICE/fifo-${job}_0.out" 2>/dev/null || true)
log=$(grep -h "dlx:" "$CLUSTER"/log/slurmd-n*.log | grep "fifo/experiment.yaml" | tail -3 || true)
expect_contains "FIFO snapshot (job output and slurmd logs)" "$output$log" \
  "experiment.yaml is a FIFO, not a regular file"
wait_nodes_released 30
# The next user's job runs.
write_experiment "$MALLORY" after.yaml after "'id -un > $marker_dir/after-ran'"
submitted=$(as_named "$MALLORY" sbatch --parsable --output=after-%A_%a.out --dl-experiment=after.yaml examples/job.sh)
wait_for_job "$(job_id_of "$submitted")" 90
[ "$(cat "$marker_dir/after-ran" 2>/dev/null)" = "$MALLORY" ] || fail "the next user's job did not run after the FIFO"
note "FIFO refused at once; nodes idle; the next user's job ran"

# ---- 4: a job named after alice's experiment. Alice's job is held, so none of its tasks has
# started and written the .jobs link: dlx status finds it by its name (the experiment's).
write_experiment "$ALICE" named.yaml named-victim "'true'"
alice_job=$(job_id_of "$(as_named "$ALICE" sbatch --parsable --hold --dl-experiment=named.yaml examples/job.sh)")
mallory_job=$(job_id_of "$(as_named "$MALLORY" sbatch --parsable --hold --job-name=named-victim --wrap true)")
victim_dir="$storage/$ALICE/named-victim"
[ -d "$victim_dir" ] || fail "alice's experiment directory $victim_dir was not made"
[ ! -e "$storage/$ALICE/.jobs/$alice_job" ] || fail "a held job's link exists: the lookup by name is not tested"
alice_view=$(as_named "$ALICE" dlx status "$victim_dir" 2>&1 || true)
expect_contains "alice's dlx status of her held experiment" "$alice_view" "$alice_job"
case "$alice_view" in *"$mallory_job"*) fail "alice's dlx status named mallory's job $mallory_job: $alice_view" ;; esac
mallory_view=$(as_named "$MALLORY" dlx status "$mallory_job" 2>&1 || true)
case "$mallory_view" in *"$victim_dir"*|*"# experiment named-victim"*)
  fail "mallory's job $mallory_job led to alice's experiment: $mallory_view" ;; esac
as_named "$ALICE" scancel "$alice_job"
as_named "$MALLORY" scancel "$mallory_job"
note "a job named after alice's experiment stands for it neither for alice nor for mallory"
