#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the real Apptainer into DEST for the container tests, on a Debian bookworm machine that
# has no Apptainer package (scripts/container-check.sh runs it).
#
#   tests/container/install_apptainer.sh DEST
#
# Debian has Apptainer only in unstable, built against a newer glibc than bookworm's (it uses
# __isoc23_strtol, GLIBC_2.38). So this takes unstable's `apptainer` and `libc6` packages from the
# Debian mirror this machine's apt already uses (a private apt state: the machine's sources,
# package list and dpkg database stay as they are), unpacks them under DEST, and points the two
# ELF programs (apptainer, starter) at the private glibc with patchelf. Debian builds Apptainer
# without setuid, and such an Apptainer is relocatable: it finds its configuration and helpers
# from its own path, with the layout made below. It then runs unprivileged, in user namespaces.
#
# This is a test rig, not a way to install Apptainer on a cluster: a site installs its
# distribution's or Apptainer's own packages.
set -euo pipefail

DEST=${1:?usage: install_apptainer.sh DEST}
[ "$(id -u)" = 0 ] || { echo "install_apptainer.sh: run it as root (it installs Debian packages)" >&2; exit 1; }
[ -x "$DEST/usr/bin/apptainer" ] && "$DEST/usr/bin/apptainer" version > /dev/null 2>&1 && {
  echo "install_apptainer.sh: Apptainer $("$DEST/usr/bin/apptainer" version) is already in $DEST"
  exit 0
}

# What the unpacked programs need from bookworm: patchelf here; libseccomp and libsqlite3 (linked),
# squashfs-tools (mksquashfs, to turn an OCI image into a SIF), uidmap, fuse3 and squashfuse
# (mounting a SIF without root).
apt-get install -y -q patchelf libseccomp2 libsqlite3-0 squashfs-tools uidmap fuse3 squashfuse > /dev/null

mirror=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' | awk '$2 == "bookworm" {print $1; exit}')
[ -n "$mirror" ] || { echo "install_apptainer.sh: no Debian bookworm mirror in this machine's apt sources" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror sid main" > "$work/sources.list"
apt_private=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
             -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o APT::Sandbox::User=root)
apt-get "${apt_private[@]}" update -q > /dev/null
(cd "$work/debs" && apt-get "${apt_private[@]}" download apptainer libc6 > /dev/null)

rm -rf "$DEST.partial"
mkdir -p "$DEST.partial/glibc"
dpkg-deb -x "$work"/debs/apptainer_*.deb "$DEST.partial"
dpkg-deb -x "$work"/debs/libc6_*.deb "$DEST.partial/glibc"
glibc=$DEST/glibc/usr/lib/x86_64-linux-gnu  # the final path: patchelf writes it into the programs
for program in usr/bin/apptainer usr/lib/x86_64-linux-gnu/apptainer/bin/starter; do
  patchelf --set-interpreter "$glibc/ld-linux-x86-64.so.2" --set-rpath "$glibc:/usr/lib/x86_64-linux-gnu" \
    "$DEST.partial/$program"
done
# The relocated layout: apptainer reads its configuration from usr/etc/apptainer, the starter from
# usr/lib/etc/apptainer; both keep session mounts under their prefix's var/lib.
mkdir -p "$DEST.partial/usr/etc"
mv "$DEST.partial/etc/apptainer" "$DEST.partial/usr/etc/apptainer"
ln -s ../etc "$DEST.partial/usr/lib/etc"
mkdir -p "$DEST.partial/usr/var/lib/apptainer/mnt/session" "$DEST.partial/usr/lib/var/lib/apptainer/mnt/session"
chmod -R a+rX "$DEST.partial"
rm -rf "$DEST"
mv "$DEST.partial" "$DEST"
echo "install_apptainer.sh: Apptainer $("$DEST/usr/bin/apptainer" version) (Debian's $(dpkg-deb -f "$work"/debs/apptainer_*.deb Version)," \
  "with Debian's glibc $(dpkg-deb -f "$work"/debs/libc6_*.deb Version)) in $DEST"
