#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 31, finding 7: root's `dlx logs DIR TRIAL` on mallory's experiment, where dlx-launch kept
# no copy of the output (mallory removed it) and dlx shows Slurm's own output file instead,
# printed /etc/shadow: her output file was a link to it, or a job name "x StdOut=/etc/shadow" put
# that path first in `scontrol show job -o`'s line. Now Slurm's fields come from the lines of
# `scontrol show job` they start (a job name with a line break that starts a second StdOut line
# makes dlx use none), root reads the file as the user the job ran as, and only a regular file of
# theirs, never through a link. Run for real: alice and mallory submit, root reads.
source "$(dirname "$0")/lib.sh"
source "$SOURCE_DIR/tests/security/users.sh"

storage=$(storage_root)
for u in "$ALICE" "$MALLORY"; do
  rm -rf "${DLX_TEST_STATE:?}/logs-$u" "${storage:?}/$u/logsec"*
  install -d -o "$u" -m 0755 "$DLX_TEST_STATE/logs-$u"
  install -o "$u" -m 0644 "$SOURCE_DIR/examples/job.sh" "$DLX_TEST_STATE/logs-$u/job.sh"
done
as_named() {  # as_named USER CMD...: USER in their own directory, with the cluster's client environment
  local user=$1 work=$DLX_TEST_STATE/logs-$1
  shift
  runuser -u "$user" -- env -i HOME="$work" USER="$user" LOGNAME="$user" PATH="$PREFIX/bin:/usr/bin:/bin" \
    SLURM_CONF="$SLURM_CONF" OMPI_MCA_btl_tcp_if_include=lo bash -c 'cd "$0" && "$@"' "$work" "$@"
}
write_experiment() {  # write_experiment USER NAME TRIALS: each trial echoes a line naming its user
  local grid=""
  [ "$3" = 1 ] || grid="hyperparameters: {n: {type: categorical, vals: [$(seq -s ', ' 0 $(($3 - 1)))]}}"$'\n'
  printf 'name: %s\nentrypoint: [sh, -c, "echo OUTPUT-OF-$(id -un)"]\n%ssearcher: {name: %s, metric: loss}\nresources: {nodes_per_trial: 1, tasks_per_node: 1}\n' \
    "$2" "$grid" "$([ "$3" = 1 ] && echo single || echo grid)" | as_named "$1" tee "$DLX_TEST_STATE/logs-$1/$2.yaml" > /dev/null
}
submit() {  # submit USER NAME SBATCH_OPTIONS...: prints the job id once the job is over
  local user=$1 name=$2 submitted
  shift 2
  submitted=$(as_named "$user" sbatch --parsable "$@" --dl-experiment="$name.yaml" job.sh 2> /dev/null)
  job_id_of "$submitted"
}
shadow_line=$(head -1 /etc/shadow)
[ -n "$shadow_line" ] || fail "/etc/shadow is empty here: nothing to look for"
never_shadow() {  # never_shadow WHAT OUTPUT
  case $2 in *"$shadow_line"*) fail "$1 printed /etc/shadow: $2" ;; esac
}

write_experiment "$ALICE" logsec-alice 1
write_experiment "$MALLORY" logsec-links 2
write_experiment "$MALLORY" logsec-name 1
write_experiment "$MALLORY" logsec-line 1
as_named "$MALLORY" mkdir out-0 out-1
alice_job=$(submit "$ALICE" logsec-alice --output=alice-%A_%a.out)
links_job=$(submit "$MALLORY" logsec-links --output='out-%a/shadow')
name_job=$(submit "$MALLORY" logsec-name --job-name='x StdOut=/etc/shadow' --output=name-%A_%a.out)
line_job=$(submit "$MALLORY" logsec-line --job-name=$'y\n   StdOut=/etc/shadow' --output=line-%A_%a.out)
for job in "$alice_job" "$links_job" "$name_job" "$line_job"; do wait_for_job "$job" 120; done
mwork=$DLX_TEST_STATE/logs-$MALLORY
# dlx-launch's own copies gone (mallory's to remove): dlx logs falls back to Slurm's files.
for exp in logsec-links logsec-name logsec-line; do as_named "$MALLORY" rm -rf "$storage/$MALLORY/$exp/trials/0/logs" "$storage/$MALLORY/$exp/trials/1/logs"; done
rm -rf "$storage/$ALICE/logsec-alice/trials/0/logs"
expect_contains "mallory's own output file" "$(cat "$mwork/out-0/shadow")" "OUTPUT-OF-$MALLORY"

# (a) her output file replaced by a link to /etc/shadow.
as_named "$MALLORY" ln -sf /etc/shadow out-0/shadow
if out=$("$PREFIX/bin/dlx" logs "$storage/$MALLORY/logsec-links" 0 2>&1); then
  fail "root's dlx logs through mallory's link succeeded: $out"
fi
never_shadow "root's dlx logs through mallory's link" "$out"
expect_contains "root's dlx logs through mallory's link" "$out" \
  "# reading Slurm's files as $MALLORY, the user job ${links_job}_0 ran as, not as root"
expect_contains "root's dlx logs through mallory's link" "$out" \
  "$mwork/out-0/shadow is a symbolic link, not the output file Slurm wrote for job ${links_job}_0 (not followed; remove it)"
note "a link to /etc/shadow: $(grep 'symbolic link' <<< "$out")"

# (a') the link one level up: her output directory replaced by a link to /etc.
as_named "$MALLORY" mv out-1 out-1.real
as_named "$MALLORY" ln -s /etc out-1
if out=$("$PREFIX/bin/dlx" logs "$storage/$MALLORY/logsec-links" 1 2>&1); then
  fail "root's dlx logs through mallory's directory link succeeded: $out"
fi
never_shadow "root's dlx logs through mallory's directory link" "$out"
expect_contains "root's dlx logs through mallory's directory link" "$out" \
  "cannot read $mwork/out-1/shadow as $MALLORY, the user job ${links_job}_1 ran as: Permission denied"
note "a directory link to /etc: $(grep 'cannot read' <<< "$out")"

# (b) no link at all: a job name that reads as a field of scontrol's one-line output.
out=$("$PREFIX/bin/dlx" logs "$storage/$MALLORY/logsec-name" 0 2>&1) || fail "root's dlx logs on the crafted job name: $out"
never_shadow "root's dlx logs on a job named 'x StdOut=/etc/shadow'" "$out"
expect_contains "the crafted job name" "$out" "Slurm's output file of job ${name_job}_0 (every attempt, as Slurm wrote it): $mwork/name-${name_job}_0.out"
expect_contains "the crafted job name" "$out" "OUTPUT-OF-$MALLORY"
note "a job named 'x StdOut=/etc/shadow': her own file shown"

# (b') a job name with a line break, which starts a second StdOut line of `scontrol show job`.
if out=$("$PREFIX/bin/dlx" logs "$storage/$MALLORY/logsec-line" 0 2>&1); then
  fail "root's dlx logs on a job name with a forged StdOut line succeeded: $out"
fi
never_shadow "root's dlx logs on a job name with a forged StdOut line" "$out"
expect_contains "a job name with a forged StdOut line" "$out" \
  "scontrol's description of job ${line_job}_0 does not give its output file, error file, working directory and user exactly once each"
note "a job name with a forged StdOut line: nothing used"

# alice's own experiment, read by root: as alice, her output.
out=$("$PREFIX/bin/dlx" logs "$storage/$ALICE/logsec-alice" 0 2>&1) || fail "root's dlx logs on alice's experiment: $out"
expect_contains "alice's experiment" "$out" "# reading Slurm's files as $ALICE, the user job ${alice_job}_0 ran as, not as root"
expect_contains "alice's experiment" "$out" "OUTPUT-OF-$ALICE"
note "alice's experiment: read as alice"
rm -rf "$DLX_TEST_STATE/logs-$ALICE" "$DLX_TEST_STATE/logs-$MALLORY"
