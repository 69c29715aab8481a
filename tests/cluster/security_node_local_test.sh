#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 31, finding 1, as alice sees it through sbatch: her experiment stages its data to
# `data: {to: <node tmp>/%u}`, and mallory made <node tmp>/dlxalice first (her own directory,
# open to all). The trial is refused on the node, before anything is written there, with a
# dlx-launch message naming the directory and the fix in the job's output and in `dlx status`;
# the trainer never runs. Once the directory is alice's own, the same experiment runs. On a trial
# of two nodes, the node that refuses (here its code copy) ends the trial on the other at once.
# (tests/security/node_local_race_test.sh runs the swap race itself, and the code copy's case.)
source "$(dirname "$0")/lib.sh"
source "$SOURCE_DIR/tests/security/users.sh"

work=$DLX_TEST_STATE/work-node-local-$ALICE
rm -rf "$work" && mkdir -p "$work" && cp -r "$SOURCE_DIR/examples" "$work/"
nodetmp=$DLX_TEST_STATE/nodetmp  # every node's /tmp: 1777, root's
rm -rf "$nodetmp" && install -d -m 1777 "$nodetmp"
marker_dir=$DLX_TEST_STATE/node-local-markers
rm -rf "$marker_dir" && install -d -m 1777 "$marker_dir"
mkdir -p "$work/dataset" && echo ALICE-DATA > "$work/dataset/data.txt"
cat > "$work/train.sh" <<SH
#!/bin/sh
echo "\$(id -un) read \$(cat "\$DLX_DATA_DIR/data.txt")" > $marker_dir/ran
SH
cat > "$work/exp.yaml" <<YAML
name: node-local
entrypoint: sh $work/train.sh
searcher: {name: single, metric: loss}
resources: {nodes_per_trial: 1, tasks_per_node: 1}
data: {stage: [dataset], to: "$nodetmp/%u"}
YAML
chown -R "$ALICE:" "$work"

as_alice() {
  runuser -u "$ALICE" -- env -i HOME="$work" USER="$ALICE" LOGNAME="$ALICE" PATH="$PREFIX/bin:/usr/bin:/bin" \
    SLURM_CONF="$SLURM_CONF" OMPI_MCA_btl_tcp_if_include=lo bash -c 'cd "$0" && "$@"' "$work" "$@"
}
submit() {  # submit NAME: runs exp.yaml as alice on n1 and waits; prints the experiment directory
  local submitted dir
  submitted=$(as_alice sbatch --parsable -w n1 --output="$work/$1-%A_%a.out" --dl-experiment=exp.yaml \
    examples/job.sh 2> "$work/$1.err") || fail "alice's sbatch: $(cat "$work/$1.err")"
  wait_for_job "$(job_id_of "$submitted")" 120
  grep -o "in /.*" "$work/$1.err" | tail -1 | sed 's/^in //'
}

# mallory's directory in alice's name.
runuser -u "$MALLORY" -- mkdir -m 0777 "$nodetmp/$ALICE"
dir=$(submit squatted)
output=$(cat "$work"/squatted-*.out)
expect_contains "the job's output" "$output" \
  "dlx-launch: cannot stage the experiment's data on n1: refusing the node-local directory $nodetmp/$ALICE for the data cache: $nodetmp/$ALICE is owned by $MALLORY, not by $ALICE or root"
expect_contains "the job's output (the fix)" "$output" \
  "use a directory that only you and root can change, such as /tmp, or a local_dir= made per user by the site; choose another node-local directory with the experiment's \`data: to:\`"
[ ! -e "$marker_dir/ran" ] || fail "the trainer ran: $(cat "$marker_dir/ran")"
[ -z "$(ls -A "$nodetmp/$ALICE")" ] || fail "the refused trial wrote into mallory's directory: $(ls -A "$nodetmp/$ALICE")"
status=$(as_alice dlx status "$dir")
expect_contains "dlx status" "$status" "refusing the node-local directory $nodetmp/$ALICE"
note "refused on n1: $(echo "$output" | grep -m1 -o 'refusing the node-local directory .*owned by [a-z]*')"

# The same experiment once the directory is alice's own.
rm -rf "${nodetmp:?}/$ALICE"
runuser -u "$ALICE" -- mkdir -m 0755 "$nodetmp/$ALICE"
submit own > /dev/null
[ "$(cat "$marker_dir/ran" 2>/dev/null)" = "$ALICE read ALICE-DATA" ] ||
  fail "alice's own directory: the trainer did not read her data: $(cat "$work"/own-*.out)"
note "in alice's own directory the same experiment stages and runs"

# A trial of two nodes whose second node refuses its code copy (mallory's directory in alice's name
# under n2's local_dir=): dlx-launch on n2 says so to the other rank, whose trainer (here a stand-in
# blocked for 300 s, as in its first collective waiting for n2) is ended at once, and the trial is
# failed naming n2 and why, not requeued. Before, rank 0 waited for its trainer's own timeout.
alice_uid=$(id -u "$ALICE")
n2_copy_dir=$CLUSTER/tmp/n2/dlx-$alice_uid
[ ! -e "$n2_copy_dir" ] || fail "$n2_copy_dir exists before mallory made it"
trap 'rm -rf "$n2_copy_dir"' EXIT  # other tests run alice's trials on n2
runuser -u "$MALLORY" -- mkdir -m 0777 "$n2_copy_dir"
cat > "$work/blocked.sh" <<'SH'
#!/bin/sh
[ "$SLURM_PROCID" = 0 ] && sleep 300
echo "rank $SLURM_PROCID ran" >&2
SH
cat > "$work/two-nodes.yaml" <<YAML
name: two-nodes
entrypoint: sh blocked.sh
searcher: {name: single, metric: loss}
resources: {nodes_per_trial: 2, tasks_per_node: 1}
code: {dir: .}
YAML
chown "$ALICE:" "$work/blocked.sh" "$work/two-nodes.yaml"
started=$SECONDS
submitted=$(as_alice sbatch --parsable -w n1,n2 --output="$work/two-nodes-%A_%a.out" --dl-experiment=two-nodes.yaml \
  examples/job.sh 2> "$work/two-nodes.err") || fail "alice's sbatch: $(cat "$work/two-nodes.err")"
wait_for_job "$(job_id_of "$submitted")" 200
took=$((SECONDS - started))
dir=$(grep -o "in /.*" "$work/two-nodes.err" | tail -1 | sed 's/^in //')
output=$(cat "$work"/two-nodes-*.out)
refusal="refusing the node-local directory $n2_copy_dir: it is owned by $MALLORY, not by you ($ALICE)"
expect_contains "the job's output (n2)" "$output" "dlx-launch: $refusal"
expect_contains "the job's output (n1)" "$output" "dlx-launch: rank 1 on n2 refused the trial ($refusal"
expect_contains "the job's output (n1's trainer ended)" "$output" "this rank's trainer cannot go on without it and was ended"
case "$output" in *"exiting 85"*|*"rank 0 ran"*) fail "the refused trial was requeued or ran on: $output" ;; esac
[ "$took" -lt 150 ] || fail "the trial took ${took} s: rank 0's trainer (300 s) was not ended"
[ -z "$(ls -A "$n2_copy_dir")" ] || fail "the refused copy wrote into mallory's directory: $(ls -A "$n2_copy_dir")"
status=$(as_alice dlx status "$dir")
expect_contains "dlx status" "$status" "failed: rank 1 on n2: $refusal"
note "n2's refusal ended the trial on both nodes in ${took} s: $(echo "$status" | grep -m1 -o 'failed: rank 1 on n2: refusing [^(]*')"
