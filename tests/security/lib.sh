# SPDX-License-Identifier: Apache-2.0
# Shared by the security tests in this folder (not the cluster ones): the two users, helpers to
# act as them, and a scratch directory every user can enter.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/users.sh"

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "# $*"; }
trap 'echo "FAIL: $(basename "$0"):$LINENO: command failed: $BASH_COMMAND" >&2' ERR

# as USER CMD...: run CMD as USER, with a clean environment (plus what the caller exports in
# AS_ENV, a list of NAME=VALUE words).
as() {
  local user=$1
  shift
  runuser -u "$user" -- env -i PATH=/usr/bin:/bin HOME=/ USER="$user" LOGNAME="$user" ${AS_ENV:-} "$@"
}

expect_contains() {  # expect_contains "what" "$haystack" "needle"
  case "$2" in
    *"$3"*) ;;
    *) fail "$1: expected to find [$3] in:
$2" ;;
  esac
}

# A scratch directory every user can enter (mode 0755, root's), removed on exit, and copies of
# the binaries there: the build tree may sit where the users cannot reach it (under /root).
SCRATCH=$(mktemp -d)
chmod 0755 "$SCRATCH"
trap 'rm -rf "$SCRATCH"' EXIT
install_binaries() {  # install_binaries BINARY...: copies into $SCRATCH/bin (on PATH for `as`)
  mkdir -p "$SCRATCH/bin"
  cp "$@" "$SCRATCH/bin/"
  chmod -R a+rX "$SCRATCH/bin"
}
