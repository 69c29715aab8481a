#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Finding 2 (issue 31): scripts/package-check.sh, run as root, worked in the fixed
# /var/tmp/dlx-package-check: mallory's link there had root's cleanup `umount -l` a mount of her
# choosing, and a directory of hers there let her swap what root ran. Now the scripts that run as
# root work in directories nobody else can have made (scripts/private_dir.sh) and unmount only
# real mounts in them. This test runs the real package-check.sh against mallory's planted link,
# up to its chroot: a stand-in debootstrap (first on PATH) makes an empty root instead of
# downloading Debian (CI has no mirror), so the script mounts /proc in it, fails at the chroot
# (there is no shell in the empty root) and runs its cleanup, as after any failure. Then
# scripts/private_dir.sh's refusals (the package check's DLX_PACKAGE_CHECK_DIR, the cluster test
# fixture's DLX_TEST_STATE, at setup and at teardown) against directories mallory made or can write.
#   root_scripts_attack_test.sh SOURCE_DIR
source "$(dirname "$0")/lib.sh"
src=$1
cleanup_mounts() {
  for mount in "$SCRATCH/victim-mount" "$@"; do
    if findmnt --mountpoint "$mount" > /dev/null 2>&1; then umount "$mount"; fi
  done
}
trap 'cleanup_mounts; rm -rf "$SCRATCH"' EXIT

# A mount that is not the package check's: what mallory wants root to unmount.
mkdir -p "$SCRATCH/victim-mount"
mount -t tmpfs -o size=1m tmpfs "$SCRATCH/victim-mount"
echo "in use" > "$SCRATCH/victim-mount/file"

# mallory's bait at the old fixed path: a link to a tree of hers whose root/proc leads to that
# mount, and a clone/ whose package.sh would run as root.
old=/var/tmp/dlx-package-check
if [ -e "$old" ] || [ -L "$old" ]; then
  fail "$old exists on this machine already: $(ls -ld "$old") (remove it and run again)"
fi
bait=$SCRATCH/mallory
install -d -o "$MALLORY" -m 0755 "$bait"
as "$MALLORY" mkdir -p "$bait/tree/root" "$bait/tree/clone/scripts"
as "$MALLORY" ln -s "$SCRATCH/victim-mount" "$bait/tree/root/proc"
printf 'touch %s/mallory-ran\n' "$bait" | as "$MALLORY" tee "$bait/tree/clone/scripts/package.sh" > /dev/null
as "$MALLORY" ln -s "$bait/tree" "$old"
trap 'rm -f "$old"; cleanup_mounts; rm -rf "$SCRATCH"' EXIT
before=$(cd "$bait" && find . -printf '%p %u %m\n' | sort)

# The stand-in debootstrap and the packages to copy (package-check.sh only copies them before the
# chroot fails).
mkdir -p "$SCRATCH/stand-in" "$SCRATCH/dist"
cat > "$SCRATCH/stand-in/debootstrap" << 'EOF'
#!/bin/sh
# debootstrap --variant=minbase SUITE ROOT MIRROR: an empty root with what package-check.sh writes into.
mkdir -p "$3/etc/apt" "$3/usr/sbin" "$3/proc" "$3/root"
EOF
chmod 0755 "$SCRATCH/stand-in/debootstrap"
touch "$SCRATCH/dist/dlx_0.0_amd64.deb"
if out=$(cd "$src" && PATH="$SCRATCH/stand-in:$PATH" DLX_PACKAGE_CHECK_DIST="$SCRATCH/dist" \
           bash scripts/package-check.sh 2>&1); then
  fail "package-check.sh passed with an empty Debian root: $out"
fi
if grep -q "no Debian mirror" <<< "$out"; then
  echo "SKIP: package-check.sh finds no Debian mirror in /etc/apt/sources.list* on this machine"
  exit 77
fi
# mallory's link and tree untouched, her choice of mount still mounted, nothing of hers run.
findmnt --mountpoint "$SCRATCH/victim-mount" > /dev/null || fail "package-check.sh unmounted mallory's choice of mount"
[ "$(cat "$SCRATCH/victim-mount/file")" = "in use" ] || fail "the victim mount's file changed"
[ "$(readlink "$old")" = "$bait/tree" ] || fail "mallory's link at $old was changed: $(ls -ld "$old")"
[ "$(cd "$bait" && find . -printf '%p %u %m\n' | sort)" = "$before" ] || fail "root wrote into mallory's tree: $(cd "$bait" && find . -printf '%p %u %m\n')"
[ ! -e "$bait/mallory-ran" ] || fail "root ran mallory's package.sh"
work=$(sed -n 's/^package-check: working in //p' <<< "$out")
[ -n "$work" ] || fail "package-check.sh did not say where it works: $out"
note "package-check.sh worked in $work"
case $work in
  /var/tmp/dlx-package-check.????????) ;;
  *) fail "package-check.sh worked in $work, not in a new private directory in /var/tmp" ;;
esac
trap 'rm -f "$old"; cleanup_mounts "$work/root/proc"; rm -rf --one-file-system "$work"; rm -rf "$SCRATCH"' EXIT
[ "$(stat -c '%U %a' "$work")" = "root 700" ] || fail "$work is not root's own 0700 directory: $(stat -c '%U %a' "$work")"
expect_contains "the failure keeps the private directory for its logs" "$out" "package-check: kept $work for its logs"
# Its own /proc mount was undone by the cleanup; mallory's choice of mount was never touched.
findmnt --mountpoint "$work/root/proc" > /dev/null && fail "package-check.sh left $work/root/proc mounted"
note "mallory's link at $old: not followed, her mount still mounted, nothing of hers ran"
rm -rf --one-file-system "$work"

# DLX_PACKAGE_CHECK_DIR naming a directory of mallory's, or one root made writable by all without
# the sticky bit: refused before anything is made.
as "$MALLORY" mkdir -m 0755 "$bait/parent"
if out=$(cd "$src" && PATH="$SCRATCH/stand-in:$PATH" DLX_PACKAGE_CHECK_DIR="$bait/parent" \
           DLX_PACKAGE_CHECK_DIST="$SCRATCH/dist" bash scripts/package-check.sh 2>&1); then
  fail "package-check.sh accepted mallory's $bait/parent: $out"
fi
expect_contains "mallory's DLX_PACKAGE_CHECK_DIR" "$out" \
  "package-check.sh: refusing to work in $bait/parent: $bait/parent belongs to $MALLORY, who could replace what is made below it"
[ -z "$(ls -A "$bait/parent")" ] || fail "package-check.sh made $(ls -A "$bait/parent") in mallory's directory"
note "refused: $out"
install -d -m 0777 "$SCRATCH/open"
if out=$(cd "$src" && DLX_PACKAGE_CHECK_DIR="$SCRATCH/open" DLX_PACKAGE_CHECK_DIST="$SCRATCH/dist" \
           PATH="$SCRATCH/stand-in:$PATH" bash scripts/package-check.sh 2>&1); then
  fail "package-check.sh accepted a directory writable by all: $out"
fi
expect_contains "a 0777 DLX_PACKAGE_CHECK_DIR" "$out" \
  "$SCRATCH/open is writable by group or others (mode 777) without the sticky bit"
note "refused: $out"

# scripts/portable-c.sh (root, the portable libdlx_c) the same way: mallory's DLX_PORTABLE_DIR is
# refused before anything is made; in a private directory of /var/tmp, a failure (a debootstrap
# that fails: no download) keeps that directory for its logs and says so.
if out=$(cd "$src" && DLX_PORTABLE_DIR="$bait/parent" bash scripts/portable-c.sh "$SCRATCH/portable-out" 2>&1); then
  fail "portable-c.sh accepted mallory's $bait/parent: $out"
fi
expect_contains "mallory's DLX_PORTABLE_DIR" "$out" \
  "portable-c.sh: refusing to work in $bait/parent: $bait/parent belongs to $MALLORY, who could replace what is made below it"
[ -z "$(ls -A "$bait/parent")" ] && [ ! -e "$SCRATCH/portable-out" ] ||
  fail "portable-c.sh made something: $(ls -A "$bait/parent") $(ls -d "$SCRATCH/portable-out" 2> /dev/null)"
note "refused: $out"
mkdir -p "$SCRATCH/failing"
printf '#!/bin/sh
echo "debootstrap: stand-in failure" >&2
exit 1
' > "$SCRATCH/failing/debootstrap"
chmod 0755 "$SCRATCH/failing/debootstrap"
if out=$(cd "$src" && PATH="$SCRATCH/failing:$PATH" bash scripts/portable-c.sh "$SCRATCH/portable-out" 2>&1); then
  fail "portable-c.sh passed with a failing debootstrap: $out"
fi
work=$(sed -n 's/^portable-c: working in //p' <<< "$out")
case $work in
  /var/tmp/dlx-portable-c.????????) ;;
  *) fail "portable-c.sh worked in '$work', not in a new private directory in /var/tmp: $out" ;;
esac
[ "$(stat -c '%U %a' "$work")" = "root 700" ] || fail "$work is not root's own 0700 directory: $(stat -c '%U %a' "$work")"
expect_contains "portable-c.sh's failure" "$out" "debootstrap: stand-in failure"
expect_contains "portable-c.sh's failure" "$out" "portable-c: kept $work for its logs"
[ ! -e "$SCRATCH/portable-out" ] || fail "a failed portable-c.sh wrote its output directory"
rm -rf --one-file-system "$work"
note "portable-c.sh: refused mallory's directory; a failure kept its own private directory"

# The cluster tests' fixture (tests/cluster/setup.sh, as root) with its fixed DLX_TEST_STATE: a
# directory mallory made there first, or her link, is refused before root installs anything.
install -d -m 1777 "$SCRATCH/shared"
as "$MALLORY" mkdir -m 0777 "$SCRATCH/shared/state"
if out=$(DLX_TEST_STATE=$SCRATCH/shared/state bash "$src/tests/cluster/setup.sh" /nonexistent-build 2>&1); then
  fail "setup.sh accepted mallory's state directory: $out"
fi
expect_contains "mallory's DLX_TEST_STATE" "$out" \
  "setup.sh: refusing $SCRATCH/shared/state: it belongs to $MALLORY, not to root (remove it, or choose another path)"
[ -z "$(ls -A "$SCRATCH/shared/state")" ] || fail "setup.sh wrote into mallory's directory: $(ls -A "$SCRATCH/shared/state")"
note "refused: $out"
# The fixture's cleanup would run the dlx installed there: refused the same way, nothing run.
as "$MALLORY" mkdir -p "$SCRATCH/shared/state/prefix/bin"
printf '#!/bin/sh\ntouch %s/teardown-ran\n' "$bait" | as "$MALLORY" tee "$SCRATCH/shared/state/prefix/bin/dlx" > /dev/null
as "$MALLORY" chmod 0755 "$SCRATCH/shared/state/prefix/bin/dlx"
if out=$(DLX_TEST_STATE=$SCRATCH/shared/state bash "$src/tests/cluster/teardown.sh" 2>&1); then
  fail "teardown.sh accepted mallory's state directory: $out"
fi
expect_contains "mallory's DLX_TEST_STATE at teardown" "$out" "teardown.sh: refusing $SCRATCH/shared/state: it belongs to $MALLORY"
[ ! -e "$bait/teardown-ran" ] || fail "teardown.sh ran mallory's dlx as root"
note "refused: $out"
as "$MALLORY" ln -s "$bait" "$SCRATCH/shared/linked"
if out=$(DLX_TEST_STATE=$SCRATCH/shared/linked bash "$src/tests/cluster/setup.sh" /nonexistent-build 2>&1); then
  fail "setup.sh accepted mallory's link: $out"
fi
expect_contains "mallory's link as DLX_TEST_STATE" "$out" "refusing $SCRATCH/shared/linked: it is a symbolic link, not a directory"
note "refused: $out"

# What the scripts use, directly: a fresh private directory each time, even with mallory's
# guesses in place; a missing state directory made root's 0755.
(
  source "$src/scripts/private_dir.sh"
  first=$(private_dir "$SCRATCH/shared" dlx-x)
  second=$(private_dir "$SCRATCH/shared" dlx-x)
  [ "$first" != "$second" ] || fail "private_dir gave $first twice"
  for dir in "$first" "$second"; do
    [ "$(stat -c '%U %a %F' "$dir")" = "root 700 directory" ] || fail "$dir: $(stat -c '%U %a %F' "$dir")"
  done
  made=$(owned_dir "$SCRATCH/shared/fresh")
  [ "$made" = "$SCRATCH/shared/fresh" ] && [ "$(stat -c '%U %a' "$made")" = "root 755" ] ||
    fail "owned_dir made $made: $(stat -c '%U %a' "$made")"
  [ "$(owned_dir "$SCRATCH/shared/fresh")" = "$SCRATCH/shared/fresh" ] || fail "owned_dir refused its own directory"
  # unmount_if_mounted never acts through a link.
  as "$MALLORY" ln -s "$SCRATCH/victim-mount" "$SCRATCH/shared/mount-link"
  unmount_if_mounted "$SCRATCH/shared/mount-link"
  findmnt --mountpoint "$SCRATCH/victim-mount" > /dev/null || fail "unmount_if_mounted followed a link"
)
note "private_dir, owned_dir and unmount_if_mounted hold"
echo "root's scripts: all checks passed"
