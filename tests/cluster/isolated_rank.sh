#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# isolated_rank.sh COMMAND...: runs COMMAND (a dlx-launch of one rank) in a network namespace of
# its own, where the only reachable TCP service is its node's PMIx server (relayed over a Unix
# socket by netns_relay.py), so MPI_Init works but no rank can reach this one and it can reach no
# rank: what a wrong interface or a firewall between nodes looks like to a trial.
set -u
relay=$(dirname "$0")/netns_relay.py
address=${PMIX_SERVER_URI4##*tcp4://}
host=${address%:*} port=${address##*:}
dir=$(mktemp -d /tmp/dlx-isolated.XXXXXX)
/usr/bin/python3 "$relay" serve-unix "$dir/pmix" "$host" "$port" &
outside=$!
for _ in $(seq 50); do [ -S "$dir/pmix" ] && break; sleep 0.1; done
uid=$(id -u) gid=$(id -g) unshare --user --map-root-user --net /bin/bash -c '
  ip link set lo up || exit 1
  /usr/bin/python3 "$0" serve-tcp "$1" "$2/pmix" "$2/ready" & inside=$!
  for _ in $(seq 50); do [ -e "$2/ready" ] && break; sleep 0.1; done
  shift 2
  # A nested user namespace gives the command its own uid and gid back (PMIx checks them).
  unshare --user --map-user="$uid" --map-group="$gid" "$@"
  status=$?
  kill "$inside"
  exit $status' "$relay" "$port" "$dir" "$@"
status=$?
kill "$outside"
rm -rf "$dir"
exit $status
