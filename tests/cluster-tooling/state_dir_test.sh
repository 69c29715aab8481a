#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The `dlx cluster` state directory against another user (issue 17, finding 2): mallory, an
# unprivileged user this test creates, makes the state directory, its etc/ or its cluster.env
# first, with a payload that creates a marker file if it ever runs as shell; `dlx-cluster status`
# and `up` (root) and `env` (as another user) refuse with a message naming the directory and the
# fix, and the payload never runs. Also: links, group/other-writable directories on the way, a
# cluster.env with values that are not what `up` writes (refused naming line and key, nothing run),
# the cluster.env an older dlx-cluster wrote (still read), and the default state directory.
# No daemon is started: every case is refused, or reads the state, before that.
#
#   state_dir_test.sh [PATH/TO/dlx-cluster]
#
# Needs root (it creates the user and files of several owners); exits 77 (ctest SKIP) otherwise.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tool="$(readlink -f "${1:-$here/../../tools/cluster/dlx-cluster}")"
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root to create the test user and files of other owners"; exit 77; fi

mallory=dlxmallory victim=nobody
id "$mallory" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$mallory"
mallory_uid="$(id -u "$mallory")"

work="$(mktemp -d /tmp/dlx-cluster-state-test.XXXXXX)"
chmod 0755 "$work"
mkdir -m 1777 "$work/shared" "$work/markers"  # shared: like /var/tmp; markers: where a payload would write
marker="$work/markers/pwned"
failures=0
cleanup() {
  local rc=$?
  if [ "$failures" -eq 0 ] && [ "$rc" -eq 0 ]; then rm -rf "$work"; else echo "# kept $work"; fi
}
trap cleanup EXIT

ok() { echo "ok   $*"; }
fail() { echo "FAIL $1"; echo "     expected: $2"; echo "     seen:     $3"; failures=$((failures + 1)); }
as_mallory() { runuser -u "$mallory" -- "$@"; }
as_victim() { runuser -u "$victim" -- "$@"; }
# run_tool [USER] ARGS...: the tool, bounded, as root or (with --as USER) another user
run_tool() {
  local clean=(env -u DLX_CLUSTER_DIR -u DLX_BIN_DIR -u DLX_PLUGIN)
  if [ "$1" == --as ]; then local user="$2"; shift 2; timeout 60 runuser -u "$user" -- "${clean[@]}" "$tool" "$@"
  else timeout 60 "${clean[@]}" "$tool" "$@"; fi
}
# refused DESC EXPECTED ARGS...: the tool fails with a message that has EXPECTED in it (each part,
# when EXPECTED is several separated by tabs), and no payload ran
refused() {
  local desc="$1" expected="$2" out rc part found=yes parts; shift 2
  rm -f "$marker"
  out="$(run_tool "$@" 2>&1)" && rc=0 || rc=$?
  IFS=$'\t' read -r -a parts <<<"$expected"
  for part in "${parts[@]}"; do [[ "$out" == *"$part"* ]] || found=no; done
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$found" == yes ] && [ ! -e "$marker" ]; then ok "$desc"
  else fail "$desc" "exit != 0, '$expected', no $marker" "exit $rc, marker $([ -e "$marker" ] && echo CREATED || echo absent): $out"; fi
}
# payload FILE: a cluster.env that runs `touch $marker` if it is ever sourced, in every way
payload() {
  printf '%s\n' "NODES=3" "touch $marker" "HOST=\$(touch $marker)" "PLUGIN=\`touch $marker\`" >"$1"
}
# a_state DIR: a root-owned state directory as `up` leaves it (etc/ with a cluster.env and a slurm.conf)
a_state() {
  mkdir -m 0755 "$1" "$1/etc" "$1/run" "$1/log" "$1/munge"
  printf '%s\n' "NODES=3" "PORT_BASE=17000" "HOST=$(hostname -s)" "PLUGIN=" "BIN_DIR=/opt/dlx/bin" >"$1/etc/cluster.env"
  echo "# slurm.conf" >"$1/etc/slurm.conf"
  chmod 0644 "$1/etc/cluster.env" "$1/etc/slurm.conf"
}

echo "# dlx-cluster: $tool; mallory is uid $mallory_uid"

# --- mallory makes the state directory first, in a world-writable (sticky) directory
state="$work/shared/state"
as_mallory mkdir -m 0755 "$state" "$state/etc"
as_mallory bash -c "$(declare -f payload); marker=$marker; payload $state/etc/cluster.env"
expect="refusing the state directory $state: $state belongs to uid $mallory_uid ($mallory), not to root or to you"
refused "status (root) refuses mallory's state directory" "$expect" status --state-dir "$state"
refused "down (root) refuses mallory's state directory" "$expect" down --state-dir "$state"
refused "up (root) refuses mallory's state directory" "$expect" up --state-dir "$state" --port-base 17590
if [ -z "$(find "$state" -user 0 -print -quit)" ]; then ok "up created nothing in mallory's state directory"
else fail "up created nothing in mallory's state directory" "no root-owned file" "$(find "$state" -user 0)"; fi
refused "env (as $victim) refuses mallory's state directory" "$expect" --as "$victim" env --state-dir "$state"
out="$(DLX_CLUSTER_DIR="$state" timeout 60 "$tool" status 2>&1)" && rc=0 || rc=$?
if [ "$rc" -ne 0 ] && [[ "$out" == *"$expect"* ]] && [ ! -e "$marker" ]; then ok "DLX_CLUSTER_DIR is checked as --state-dir is"
else fail "DLX_CLUSTER_DIR is checked as --state-dir is" "exit != 0, '$expect'" "exit $rc: $out"; fi

# --- a root-owned state directory whose etc/ or cluster.env is mallory's
state="$work/state-etc"
a_state "$state"
chown "$mallory" "$state/etc"
refused "status refuses etc/ of another user" "$state/etc belongs to uid $mallory_uid ($mallory)" status --state-dir "$state"
state="$work/state-env"
a_state "$state"
payload "$state/etc/cluster.env"
chown "$mallory" "$state/etc/cluster.env"
refused "env (as $victim) refuses a cluster.env of another user" \
  "$state/etc/cluster.env belongs to uid $mallory_uid ($mallory)" --as "$victim" env --state-dir "$state"
chown root "$state/etc/cluster.env"
chmod 0666 "$state/etc/cluster.env"
refused "status refuses a cluster.env writable by others" \
  "$state/etc/cluster.env is writable by group or others (mode 666)" status --state-dir "$state"

# --- modes and links on the way
state="$work/state-open"
a_state "$state"
chmod 0777 "$state"
refused "a state directory writable by others is refused" \
  "$state is writable by group or others (mode 777): another user may have put files in it" status --state-dir "$state"
mkdir -m 0777 "$work/open"
a_state "$work/open/state"
refused "a world-writable directory without the sticky bit above it is refused" \
  "$work/open is writable by group or others (mode 777) without the sticky bit" --as "$victim" env --state-dir "$work/open/state"
a_state "$work/good"
as_mallory ln -s "$work/good" "$work/shared/link"
refused "a link of another user on the way is refused" \
  "$work/shared/link belongs to uid $mallory_uid ($mallory)" status --state-dir "$work/shared/link"
mkdir -m 0755 "$work/state-link"
ln -s "$work/good/etc" "$work/state-link/etc"
refused "etc/ as a link is refused" "$work/state-link/etc is a symbolic link, not a directory" status --state-dir "$work/state-link"

# --- what is accepted: root's state under a sticky directory, through root's own link
state="$work/shared/good"
a_state "$state"
ln -s "$state" "$work/shared/good-link"
for dir in "$state" "$work/shared/good-link"; do
  out="$(run_tool --as "$victim" env --state-dir "$dir" 2>&1)" && rc=0 || rc=$?
  if [ "$rc" -eq 0 ] && [[ "$out" == *"export SLURM_CONF=$state/etc/slurm.conf"* ]] && [[ "$out" == *"export PATH=/opt/dlx/bin:"* ]]; then
    ok "env (as $victim) reads root's state in $dir"
  else fail "env (as $victim) reads root's state in $dir" "exit 0, SLURM_CONF and PATH exports" "exit $rc: $out"; fi
done

# --- cluster.env is data: values that are not what `up` writes are refused, naming line and key
state="$work/state-values"
a_state "$state"
env_file="$state/etc/cluster.env"
check_value() {
  local desc="$1" line="$2" expected="$3"
  printf '%s\n' "# written by dlx-cluster up" "NODES=3" "$line" >"$env_file"
  refused "cluster.env: $desc" "$env_file line 3: "$'\t'"$expected" --as "$victim" env --state-dir "$state"
}
check_value "a command substitution in PORT_BASE" "PORT_BASE=17000\$(touch $marker)" \
  "PORT_BASE=17000\\\$\\(touch\\ $marker\\): PORT_BASE: not a port number (1 to 65535)"
check_value "a command after a value" "NODES=3; touch $marker" "NODES: not a number of nodes"
check_value "a backquoted HOST" "HOST=\`touch $marker\`" "HOST: not a host name"
check_value "a relative PLUGIN" "PLUGIN=x/dlx_spank.so" "PLUGIN: not an absolute path without spaces"
check_value "a relative PLUGSTACK" "PLUGSTACK=etc/plugstack.conf" "PLUGSTACK: not an absolute path without spaces"
check_value "an unknown key" "LD_PRELOAD=/tmp/x.so" "LD_PRELOAD: not a known key (NODES, PORT_BASE, HOST, PLUGIN, PLUGSTACK, BIN_DIR, GPUS, SHARDS_PER_GPU, PLACEHOLDER_GPUS, FIRST_JOB_ID)"
check_value "a command in GPUS" "GPUS=2\$(touch $marker)" "GPUS: not a number of GPUs (0 to 64)"
check_value "a word in SHARDS_PER_GPU" "SHARDS_PER_GPU=four" "SHARDS_PER_GPU: not a number of shards"
check_value "PLACEHOLDER_GPUS not yes or no" "PLACEHOLDER_GPUS=maybe" "PLACEHOLDER_GPUS: not yes or no"
check_value "a job id past Slurm's" "FIRST_JOB_ID=99999999" "FIRST_JOB_ID: not a job id (1 to 60000000"
check_value "a line that is not KEY=VALUE" "touch $marker" "not KEY=VALUE"
check_value "a control character" $'HOST=a\033]0;title\007' "HOST: a control character in the value"
# As an older dlx-cluster wrote it (printf %q: '' for an empty value): still read.
printf '%s\n' "# written by dlx-cluster up; reused as defaults by later dlx-cluster calls" "NODES=3" \
  "PORT_BASE=17000" "HOST=$(hostname -s)" "PLUGIN=''" "BIN_DIR=''" >"$env_file"
out="$(run_tool --as "$victim" env --state-dir "$state" 2>&1)" && rc=0 || rc=$?
if [ "$rc" -eq 0 ] && [[ "$out" == *"export SLURM_CONF=$state/etc/slurm.conf"* ]] && [[ "$out" != *"export PATH"* ]]; then
  ok "a cluster.env an older dlx-cluster wrote is still read"
else fail "a cluster.env an older dlx-cluster wrote is still read" "exit 0, SLURM_CONF, no PATH export" "exit $rc: $out"; fi

# --- the default state directory is not in a world-writable directory
if [ ! -e /var/lib/dlx-cluster/etc/slurm.conf ]; then
  out="$(run_tool --as "$victim" env 2>&1)" && rc=0 || rc=$?
  if [ "$rc" -ne 0 ] && [[ "$out" == *"no cluster configured in /var/lib/dlx-cluster"* ]]; then ok "the default state directory is /var/lib/dlx-cluster"
  else fail "the default state directory is /var/lib/dlx-cluster" "'no cluster configured in /var/lib/dlx-cluster'" "exit $rc: $out"; fi
else
  echo "# skipped the default state directory check: /var/lib/dlx-cluster has a cluster"
fi

echo "# $failures failure(s)"
[ "$failures" -eq 0 ]
