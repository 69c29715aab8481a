# Sourced by the security tests: two real unprivileged users, made here when missing (the tests
# need root for that, and skip with status 77 otherwise), and helpers to act as them.
#   dlxalice    the victim: submits experiments
#   dlxmallory  the attacker: a member of dlxalice's group (group members may read an experiment,
#               never change, block or run it)
set -euo pipefail
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: the security tests create the users dlxalice and dlxmallory: run them as root"
  exit 77
fi
ALICE=dlxalice
MALLORY=dlxmallory
for u in "$ALICE" "$MALLORY"; do
  id "$u" > /dev/null 2>&1 || useradd --system --user-group --no-create-home --shell /bin/bash "$u"
done
id -nG "$MALLORY" | tr ' ' '\n' | grep -qx "$ALICE" || usermod -a -G "$ALICE" "$MALLORY"

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
