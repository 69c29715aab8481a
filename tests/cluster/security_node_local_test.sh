#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 31, finding 1, as alice sees it through sbatch: her experiment stages its data to
# `data: {to: <node tmp>/%u}`, and mallory made <node tmp>/dlxalice first (her own directory,
# open to all). The trial is refused on the node, before anything is written there, with a
# dlx-launch message naming the directory and the fix in the job's output and in `dlx status`;
# the trainer never runs. Once the directory is alice's own, the same experiment runs.
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
