#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and installs the real Enroot into DEST for the container tests, from an Enroot source
# tree (NVIDIA's repository; 4.1.2 was tested) that the caller has: Enroot is in no Debian
# release, and this project's build hosts reach no other package source.
#
#   tests/container/install_enroot.sh SOURCE_DIR DEST
#
# Enroot is bash scripts and five small C helpers. Its release build links the helpers statically
# against musl, libbsd's pieces and Linux headers from git submodules; here they link against
# bookworm's glibc (FORCE_GLIBC=1, Enroot's own switch), its headers, and Debian's libbsd for
# strlcpy/strlcat (in glibc only from 2.38). Debian's makeself stands in for the submodule (used
# only by `enroot bundle`). The source tree is copied, never changed.
#
# This is a test rig, not a way to install Enroot on a cluster: a site installs NVIDIA's packages.
set -euo pipefail

SOURCE=${1:?usage: install_enroot.sh SOURCE_DIR DEST}
DEST=${2:?usage: install_enroot.sh SOURCE_DIR DEST}
[ "$(id -u)" = 0 ] || { echo "install_enroot.sh: run it as root (it installs Debian packages)" >&2; exit 1; }
[ -f "$SOURCE/enroot.in" ] && [ -f "$SOURCE/src/runtime.sh" ] ||
  { echo "install_enroot.sh: $SOURCE is not an Enroot source tree (no enroot.in, src/runtime.sh)" >&2; exit 1; }
if [ -x "$DEST/bin/enroot" ] && "$DEST/bin/enroot" version > /dev/null 2>&1; then
  echo "install_enroot.sh: Enroot $("$DEST/bin/enroot" version) is already in $DEST"
  exit 0
fi

# To build: make, gcc, libbsd-dev, makeself. Enroot's documented run-time needs: curl, gawk, jq,
# parallel, squashfs-tools (unsquashfs for `enroot create`), zstd and pigz.
apt-get install -y -q make gcc libbsd-dev makeself curl gawk jq parallel squashfs-tools zstd pigz > /dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -a "$SOURCE/." "$work/enroot"
cd "$work/enroot"
mkdir -p deps/makeself deps/linux-headers deps/dist/linux/include
cp /usr/bin/makeself deps/makeself/makeself.sh
touch deps/linux-headers/.stamp  # the system's Linux headers
sed -i 's/^\t-git submodule update --init$/\t-true/' Makefile  # the submodules are provided above
build=(FORCE_GLIBC=1 "prefix=$DEST" "sysconfdir=$DEST/etc" "LDLIBS=-l:libbsd.a /usr/lib/x86_64-linux-gnu/libbsd.so")
make "${build[@]}" > "$work/build.log" 2>&1 || { tail -n 30 "$work/build.log" >&2; exit 1; }
rm -rf "$DEST"
make "${build[@]}" install > /dev/null
echo "install_enroot.sh: Enroot $("$DEST/bin/enroot" version) in $DEST"
