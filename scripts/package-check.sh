#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The full check of the Debian packages, as a sysadmin meets them (docs/admin-guide.md):
#   1. a fresh clone of this checkout's HEAD builds the packages (bash scripts/package.sh);
#   2. a fresh Debian root made with debootstrap, from the Debian mirror this machine's apt uses
#      (read from /etc/apt/sources.list* at run time), receives them with dpkg -i and apt;
#   3. inside it (chroot, in network, PID and mount namespaces of its own: the cluster's daemons
#      listen on that namespace's loopback only and end with it), scripts/package-check-root.sh
#      runs the admin guide's commands (its blocks marked `<!-- tested: ... -->`): install,
#      enable through /etc/slurm/plugstack.conf.d, a local cluster from the installed paths only,
#      the grid example as an unprivileged user, dlx doctor, import dlx with /usr/bin/python3,
#      the out-of-tree C++ and C consumers (tests/install/consumer) with find_package(dlx) and
#      pkg-config, removing the plugin package (plain jobs still run) and uninstalling.
# Needs root, debootstrap, the network to that mirror, about 3 GB in a private directory made
# below DLX_PACKAGE_CHECK_DIR (default /var/tmp: dlx-package-check.XXXXXXXX, mode 0700, removed
# after a pass and kept with its logs after a failure; scripts/private_dir.sh: never a fixed name
# another user could make first) and 15 to 25 minutes.
# Only committed changes are checked (the clone is of HEAD).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
source scripts/private_dir.sh
[ "$(id -u)" = 0 ] || { echo "package-check: needs root (debootstrap, chroot)" >&2; exit 1; }
command -v debootstrap > /dev/null ||
  { echo "package-check: debootstrap is missing: bash scripts/install-deps.sh installs it" >&2; exit 1; }
say() { echo "package-check: $*"; }
started=$SECONDS

# The Debian mirror and suite this machine installs from (never written into the tree).
source scripts/debian_mirror.sh
mirror=$(debian_mirror)
security=$(debian_security_mirror)
suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
[ -n "$mirror" ] && [ -n "$suite" ] ||
  { echo "package-check: no Debian mirror (a .../debian URI) in /etc/apt/sources.list*" >&2; exit 1; }

work=$(private_dir "${DLX_PACKAGE_CHECK_DIR:-/var/tmp}" dlx-package-check) || exit 1
root=$work/root
say "working in $work"
# Nothing is left mounted: the namespaces' mounts end with them; /proc below is the setup's own.
trap 'private_dir_done package-check "$work" $? "$root/proc"' EXIT

# 1. The packages, from a fresh clone: the packages for a plain Debian, without CUDA (NVIDIA's
#    runtime and NCCL are no Debian packages) and without the tests (ctest ran them on the tree).
#    DLX_PACKAGE_CHECK_DIST=DIR takes the packages from DIR instead (for work on this script).
#    DLX_PACKAGE_CHECK_PORTABLE=LIBRARY: the portable libdlx_c of this checkout (scripts/portable-c.sh)
#    is packaged too (package.sh --portable) and installed with the others.
dist=${DLX_PACKAGE_CHECK_DIST:-$work/clone/dist}
portable=()
if [ -n "${DLX_PACKAGE_CHECK_PORTABLE:-}" ]; then portable=(--portable "$(realpath -- "$DLX_PACKAGE_CHECK_PORTABLE")"); fi
if [ -z "${DLX_PACKAGE_CHECK_DIST:-}" ]; then
  say "cloning $(git rev-parse --short HEAD) and building the packages (scripts/package.sh ${portable[*]})"
  git clone --quiet --no-hardlinks "$src" "$work/clone"
  (cd "$work/clone" &&
   DLX_CMAKE_ARGS="-DDLX_WITH_CUDA=OFF -DDLX_BUILD_TESTS=OFF -DDLX_BUILD_BENCH=OFF ${DLX_CMAKE_ARGS:-}" \
     bash scripts/package.sh "${portable[@]}" > "$work/package.log" 2>&1) ||
    { tail -30 "$work/package.log"; echo "package-check: scripts/package.sh failed (log: $work/package.log)" >&2; exit 1; }
fi
say "packages: $(cd "$dist" && echo *.deb)"

# 2. A fresh Debian root, with the host's Debian sources (so the same library versions as the
#    build host), no service started by package scripts (policy-rc.d), and the packages.
say "debootstrap $suite into $root"
debootstrap --variant=minbase "$suite" "$root" "$mirror" > "$work/debootstrap.log" 2>&1 ||
  { tail -20 "$work/debootstrap.log"; echo "package-check: debootstrap failed (log: $work/debootstrap.log)" >&2; exit 1; }
{
  echo "deb $mirror $suite main"
  echo "deb $mirror $suite-updates main"
  [ -z "$security" ] || echo "deb $security $suite-security main"
} > "$root/etc/apt/sources.list"
# /etc/hosts as Debian's installer writes it (debootstrap writes none): Slurm resolves the host's
# name, which dlx cluster uses for its nodes.
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n' "$(hostname)" > "$root/etc/hosts"
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
mkdir -p "$root/root/check"
mkdir -p "$root/root/check/dist"
cp "$dist"/*.deb "$root/root/check/dist/"
cp -a "$src/tests/install/consumer" "$root/root/check/consumer"
cp "$src/scripts/package-check-root.sh" "$root/root/check/"
# The admin guide's tested blocks, one file each (scripts/package-check-root.sh runs them).
mkdir -p "$root/root/check/doc"
awk -v dir="$root/root/check/doc" '
  /^<!-- tested: [a-z-]+ as=(root|user) -->$/ { name = $3; as = substr($4, 4); next }
  name != "" && /^```/ && !inside { inside = 1; file = dir "/" name "." as ".sh"; printf "" > file; next }
  inside && /^```/ { inside = 0; name = ""; close(file); next }
  inside { print >> file }' "$src/docs/admin-guide.md"
say "admin guide blocks: $(cd "$root/root/check/doc" && echo *)"

# 3. Inside the root. The apt downloads need the network; the cluster runs in its own.
mount -t proc proc "$root/proc"
chroot "$root" env DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin \
  bash /root/check/package-check-root.sh install
umount "$root/proc"
unshare --net --pid --fork --mount --propagation private bash -c '
  set -e
  root=$1
  ip link set lo up
  # Slurm asks getaddrinfo for IPv4 with AI_ADDRCONFIG, which finds nothing while 127.0.0.1 is the
  # only IPv4 address: a second loopback address (still only this namespace reaches it).
  ip addr add 127.0.0.2/8 dev lo
  mount -t proc proc "$root/proc"
  # slurmd initialises its cgroup plugin from /sys/fs/cgroup even with proctrack/linuxproc.
  mount --rbind /sys "$root/sys"
  mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
  mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
  exec chroot "$root" env DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    bash /root/check/package-check-root.sh cluster' _ "$root"
say "passed in $((SECONDS - started)) s"
