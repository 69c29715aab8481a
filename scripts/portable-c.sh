#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The portable libdlx_c: the library of the dlx Python package for trials in container images of
# any distribution with glibc 2.28 or later (docs/containers.md, "The SDK in any image"; the admin
# guide, section 10b, says where to install it). Needs root (debootstrap, chroot), the network to
# the Debian mirror this machine's apt uses, nasm and dpkg-dev (scripts/install-deps.sh), about
# 800 MB and 3 to 4 minutes on 2 cores (3 min 15 s measured: docs/benchmarks.md).
#
#   bash scripts/portable-c.sh [OUTDIR]      OUTDIR/libdlx_c.so.0 (default: ./build-portable)
#
# 1. The older glibc: a debootstrap root of Debian bullseye (glibc 2.31, Python 3.9, numpy), with
#    its libraries' absolute links made relative so that the linker stays inside it. It is the
#    compilers' sysroot (cmake/PortableToolchain.cmake) and the test image at once.
# 2. HDF5, yaml-cpp, fmt and ISA-L from Debian's sources (apt-get source) of the versions this
#    machine builds dlx with, static and position-independent, against that root: Debian's own
#    static archives are not position-independent, and it ships none of fmt and ISA-L. HDF5 as
#    Debian configures it (thread-safe, the 1.8 API by default), without its compression filters
#    and S3 driver, which dlx does not use.
# 3. libdlx_c alone, DLX_PORTABLE_C=ON (cmake/DlxPortableC.cmake), against the same.
# 4. Checks: tests/portable/portable_library_check.py against the root's own libraries (needs
#    only glibc and libgcc_s, no glibc version after 2.28, exports only dlx_*); then
#    tests/portable/portable_sdk_test.py inside the root as nobody (PID and mount namespaces of
#    its own, its own /proc), with the library and the package where dlx-launch mounts them in a
#    container (/dlx/lib, /dlx/python): import dlx, metrics, a checkpoint and a bit-exact resume,
#    and a communicator refused with a message; h5py reads the files back on this machine.
# Works in a private directory below DLX_PORTABLE_DIR (default /var/tmp), removed after a pass
# and kept with its logs after a failure. Each phase's time goes to the output.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
out=$(realpath -m -- "${1:-build-portable}")
suite=${DLX_PORTABLE_SUITE:-bullseye}
max_glibc=${DLX_PORTABLE_MAX_GLIBC:-2.28}
source scripts/private_dir.sh
source scripts/debian_mirror.sh
say() { echo "portable-c: $*"; }
fail() { echo "portable-c: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (debootstrap, chroot)"
for tool in debootstrap dpkg-source nasm autoreconf cmake ninja objcopy unshare chroot; do
  command -v "$tool" > /dev/null || fail "$tool is missing: bash scripts/install-deps.sh installs it"
done
/usr/bin/python3 -c 'import elftools, h5py' 2> /dev/null ||
  fail "python3-pyelftools and python3-h5py are missing: bash scripts/install-deps.sh installs them"
mirror=$(debian_mirror)
[ -n "$mirror" ] || fail "no Debian mirror (a .../debian URI) in /etc/apt/sources.list*"

work=$(private_dir "${DLX_PORTABLE_DIR:-/var/tmp}" dlx-portable-c) || exit 1
root=$work/root prefix=$work/prefix
say "working in $work"
trap 'private_dir_done portable-c "$work" $?' EXIT
phase() { local TIMEFORMAT="portable-c: $1 took %R s"; shift; time "$@"; }
# run LOG COMMAND...: the command's output to LOG, its last lines on failure.
run() {
  local log=$1; shift
  "$@" > "$log" 2>&1 || { tail -30 "$log" >&2; fail "failed: $* (log: $log)"; }
}

# 1. The older root.
make_root() {
  run "$work/debootstrap.log" debootstrap --variant=minbase \
    --include=libc6-dev,linux-libc-dev,python3,python3-numpy "$suite" "$root" "$mirror"
  local link target
  while IFS= read -r -d '' link; do
    target=$(readlink "$link")
    ln -sfn "$(realpath -s -m --relative-to="$(dirname "$link")" "$root$target")" "$link"
  done < <(find "$root/usr/lib" "$root/usr/lib64" -type l -lname '/*' -print0)
}
say "debootstrap $suite into $root"
phase "the $suite root" make_root

# 2. The static libraries, from Debian's sources of the installed versions.
toolchain=(-G Ninja -DCMAKE_TOOLCHAIN_FILE="$src/cmake/PortableToolchain.cmake" -DDLX_PORTABLE_SYSROOT="$root"
           -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib
           -DBUILD_SHARED_LIBS=OFF)
source_of() { dpkg-query -W -f='${source:Package}=${source:Version}' "$1"; }
fetch_sources() {
  mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial" "$work/sources"
  echo "deb-src $mirror $(. /etc/os-release && echo "$VERSION_CODENAME") main" > "$work/apt/sources.list"
  local apt=(apt-get -q -o Dir::Etc::SourceList="$work/apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
             -o Dir::State::Lists="$work/apt/lists" -o Dir::Cache="$work/apt/cache" -o APT::Sandbox::User=root)
  run "$work/apt-update.log" "${apt[@]}" update
  (cd "$work/sources" &&
   run "$work/apt-source.log" "${apt[@]}" source "$(source_of libhdf5-dev)" "$(source_of libyaml-cpp-dev)" \
     "$(source_of libfmt-dev)" "$(source_of libisal-dev)")
}
build_libraries() {
  local dir
  dir=$(echo "$work"/sources/hdf5-*/)
  mkdir -p "$work/build-hdf5"
  # HDF5's configure checks run programs that write their answers into the current directory.
  (cd "$work/build-hdf5" &&
   run "$work/hdf5.log" cmake -S "$dir" -B . "${toolchain[@]}" -DBUILD_TESTING=OFF -DHDF5_BUILD_TOOLS=OFF \
     -DHDF5_BUILD_EXAMPLES=OFF -DHDF5_BUILD_CPP_LIB=OFF -DHDF5_BUILD_FORTRAN=OFF -DHDF5_BUILD_HL_LIB=OFF \
     -DHDF5_BUILD_JAVA=OFF -DHDF5_ENABLE_Z_LIB_SUPPORT=OFF -DHDF5_ENABLE_SZIP_SUPPORT=OFF \
     -DHDF5_ENABLE_THREADSAFE=ON -DALLOW_UNSUPPORTED=ON -DDEFAULT_API_VERSION=v18 &&
   run "$work/hdf5-build.log" ninja install)
  dir=$(echo "$work"/sources/yaml-cpp-*/)
  run "$work/yaml-cpp.log" cmake -S "$dir" -B "$work/build-yaml-cpp" "${toolchain[@]}" -DYAML_CPP_BUILD_TESTS=OFF \
    -DYAML_CPP_BUILD_TOOLS=OFF -DYAML_CPP_BUILD_CONTRIB=OFF -DYAML_BUILD_SHARED_LIBS=OFF
  run "$work/yaml-cpp-build.log" ninja -C "$work/build-yaml-cpp" install
  dir=$(echo "$work"/sources/fmtlib-*/)
  run "$work/fmt.log" cmake -S "$dir" -B "$work/build-fmt" "${toolchain[@]}" -DFMT_TEST=OFF -DFMT_DOC=OFF
  run "$work/fmt-build.log" ninja -C "$work/build-fmt" install
  dir=$(echo "$work"/sources/libisal-*/)
  local multiarch=x86_64-linux-gnu
  (cd "$dir" && run "$work/isal-autogen.log" ./autogen.sh)
  mkdir -p "$work/build-isal"
  (cd "$work/build-isal" &&
   run "$work/isal.log" "$dir/configure" --prefix="$prefix" --libdir="$prefix/lib" --disable-shared --with-pic \
     CC="gcc --sysroot=$root -B$root/usr/lib/$multiarch" CFLAGS="-O2 -fPIC" \
     LDFLAGS="-L$root/usr/lib/$multiarch -L$root/lib/$multiarch" &&
   run "$work/isal-build.log" make -j "$(nproc)" install)
}
say "Debian's sources: $(source_of libhdf5-dev) $(source_of libyaml-cpp-dev) $(source_of libfmt-dev) $(source_of libisal-dev)"
phase "fetching the sources" fetch_sources
phase "HDF5, yaml-cpp, fmt and ISA-L" build_libraries

# 3. libdlx_c.
build_dlx() {
  run "$work/dlx.log" cmake -S "$src" -B "$work/build-dlx" -G Ninja -DDLX_PORTABLE_C=ON -DDLX_WERROR=ON \
    -DCMAKE_TOOLCHAIN_FILE="$src/cmake/PortableToolchain.cmake" -DDLX_PORTABLE_SYSROOT="$root" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_UNITY_BUILD=ON \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
  run "$work/dlx-build.log" ninja -C "$work/build-dlx" dlx_c
}
phase "libdlx_c" build_dlx
library=$work/build-dlx/lib/libdlx_c.so.0

# 4. The checks.
say "checking its symbols against $suite's libraries"
/usr/bin/python3 tests/portable/portable_library_check.py "$library" --max-glibc "$max_glibc" --root "$root"
check_in_root() {
  mkdir -p "$root/dlx/lib" "$root/dlx/python" "$root/dlx/tests" "$root/tmp/experiment"
  cp -L "$library" "$root/dlx/lib/libdlx_c.so.0"
  cp -r python/dlx "$root/dlx/python/"
  cp tests/portable/portable_sdk_test.py "$root/dlx/tests/"
  chown 65534:65534 "$root/tmp/experiment"
  unshare --mount --pid --fork --mount-proc="$root/proc" \
    chroot --userspec=65534:65534 "$root" env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 \
      DLX_LIBRARY=/dlx/lib/libdlx_c.so.0 PYTHONPATH=/dlx/python DLX_EXPECT_PORTABLE=1 \
      python3 /dlx/tests/portable_sdk_test.py run /tmp/experiment
  /usr/bin/python3 tests/portable/portable_sdk_test.py read-back "$root/tmp/experiment"
}
say "the SDK in the $suite root, as nobody"
phase "the check in the root" check_in_root

mkdir -p "$out"
cp -L "$library" "$out/libdlx_c.so.0"
say "done: $out/libdlx_c.so.0 ($(du -h "$out/libdlx_c.so.0" | cut -f1)); install it as <libdir>/dlx/container/libdlx_c.so.0 beside dlx's libdlx_c (docs/containers.md)"
