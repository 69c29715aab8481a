#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fixture: install the build into $DLX_TEST_STATE/prefix (readable by every user, unlike a build
# tree under /root), create the unprivileged test user, start the local cluster.
set -euo pipefail
build_dir=$1
: "${DLX_TEST_STATE:?}"
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: the cluster tests start slurmd and create a test user: run them as root"
  exit 77
fi
user=${DLX_TEST_USER:-dlxtest}
# Root installs binaries into the state directory and runs them: it must be root's own, never a
# directory or link another user made at that (predictable) path first (scripts/private_dir.sh).
source "$(dirname "$0")/../../scripts/private_dir.sh"
owned_dir "$DLX_TEST_STATE" > /dev/null || exit 1
chmod 0755 "$DLX_TEST_STATE"
# A fresh prefix: files an earlier build installed in another layout must not shadow this one.
rm -rf "$DLX_TEST_STATE/prefix"
cmake --install "$build_dir" --prefix "$DLX_TEST_STATE/prefix" > "$DLX_TEST_STATE/install.log"
chmod -R a+rX "$DLX_TEST_STATE/prefix"
# Both test clusters' setups run at once (CMakeLists.txt): the other may be making the user, and
# useradd fails while it holds /etc/passwd's lock.
for attempt in 1 2 3 4 5; do
  id "$user" > /dev/null 2>&1 && break
  useradd --system --no-create-home --shell /bin/bash "$user" 2> "$DLX_TEST_STATE/useradd.err" && break
  [ "$attempt" -lt 5 ] || { cat "$DLX_TEST_STATE/useradd.err" >&2; exit 1; }
  sleep 1
done
# A fresh submit directory: job ids restart at 1 with a fresh cluster, so an earlier run's output
# files (appended to, --open-mode=append) would be read as this run's.
rm -rf "$DLX_TEST_STATE/work"
mkdir -p "$DLX_TEST_STATE/work"
chown "$user" "$DLX_TEST_STATE/work"
cp -r "$(dirname "$0")/../../examples" "$DLX_TEST_STATE/work/"
chown -R "$user" "$DLX_TEST_STATE/work/examples"
# A fresh cluster: an earlier run's daemons stopped and its whole state directory gone. A
# machine that ran the tests before kept it in $DLX_TEST_STATE: slurmctld recovered that run's
# jobs (a test that checks that nothing of a user's is queued found one), and with job ids
# starting at 1 again, its storage's .jobs/<id> links would name that run's experiments.
# (Built images stay: $DLX_TEST_STATE/images.)
"$DLX_TEST_STATE/prefix/bin/dlx" cluster down --state-dir "$DLX_TEST_STATE/cluster" > /dev/null
rm -rf "$DLX_TEST_STATE/cluster"
# shellcheck disable=SC2086  # DLX_TEST_CLUSTER_OPTIONS: words of options (tests/cluster/CMakeLists.txt)
"$DLX_TEST_STATE/prefix/bin/dlx" cluster up --state-dir "$DLX_TEST_STATE/cluster" \
  --port-base "$((${DLX_TEST_PORT_BASE:-17400} + ${DLX_TEST_PORT_OFFSET:-0}))" ${DLX_TEST_CLUSTER_OPTIONS:-}
