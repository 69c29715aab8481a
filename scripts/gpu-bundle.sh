#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Makes .gpu-bundle.tar.xz (and its unpacked tree .gpu-bundle/): what scripts/gpu-check.sh needs to build and run dlx's GPU checks on a bare
# CUDA machine that has nvcc, PyTorch (with NCCL) and a C++ compiler but no Debian packages and no
# network. Run here, on Debian bookworm (needs apt-get download, dpkg-deb, g++; no root).
#
#   bash scripts/gpu-bundle.sh            # -> .gpu-bundle.tar.xz (git-ignored), with its size
#
# Contents, all from Debian's packages (apt-get download + dpkg -x into one root):
#   root/      the -dev packages dlx configures against (Open MPI, HDF5, OpenSSL, yaml-cpp, fmt,
#              nlohmann-json, Boost.ProgramOptions, ISA-L, Catch2, protobuf, libslurm) and the
#              shared-library closure of what the GPU checks run (dlx-launch, libdlx_c.so, the
#              example trainer, mpirun), minus glibc/libstdc++ (the machine's own are newer),
#              Open MPI's network components for fabrics a one-node check never uses, static
#              libraries, documentation and the Boost headers nothing includes;
#   nccl/      nccl.h of the CUDA toolkit here, used only where the machine's NCCL (PyTorch's
#              wheel) ships no header;
#   MANIFEST   package=version of everything unpacked, and the bundle's size.
# The device tool carries at most 64 MiB with the working tree: the script fails above 56 MiB.
#
#   bash scripts/gpu-bundle.sh --prebuilt build   # also .gpu-prebuilt/ from a CUDA build here
#
# --prebuilt BUILD copies, stripped, what the checks run from a build tree made here with CUDA
# (dlx, dlx-launch, libdlx_c.so, the example trainer, the GPU checks and bench_allreduce_nccl)
# into .gpu-prebuilt/: gpu-check.sh falls back to them when its own build on the GPU machine
# fails (another compiler there), so that one session's GPU time still yields the checks.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.gpu-bundle
prebuilt_from=""
if [ "${1:-}" = --prebuilt ]; then prebuilt_from=${2:?--prebuilt needs a build directory}; fi
limit_mib=56

if [ -n "$prebuilt_from" ]; then
  rm -rf .gpu-prebuilt && mkdir -p .gpu-prebuilt/bin .gpu-prebuilt/lib/dlx/python
  for program in dlx dlx-launch dlx-example-logreg dlx-gpu-nccl-check dlx-gpu-checkpoint-check dlx-gpu-metrics-check \
      bench_allreduce_nccl; do
    [ -x "$prebuilt_from/bin/$program" ] || { echo "gpu-bundle: no $prebuilt_from/bin/$program" >&2; exit 1; }
    strip --strip-debug -o ".gpu-prebuilt/bin/$program" "$prebuilt_from/bin/$program"
  done
  strip --strip-debug -o .gpu-prebuilt/lib/libdlx_c.so "$prebuilt_from/lib/libdlx_c.so"
  ln -s ../../../../python/dlx .gpu-prebuilt/lib/dlx/python/dlx  # where dlx-launch looks
  echo "gpu-bundle: .gpu-prebuilt: $(du -sh .gpu-prebuilt | cut -f1)"
fi

# The dev packages the build configures against, and the runtime packages of the programs the
# checks run (their ldd closure on a bookworm build, by package name).
packages=(
  libopenmpi-dev libopenmpi3 openmpi-bin openmpi-common libpmix2 libhwloc15 libevent-core-2.1-7
  libevent-pthreads-2.1-7 libudev1 libnuma1
  libhdf5-dev libhdf5-103-1 libhdf5-cpp-103-1 libsz2 libaec0 libcurl4 libnghttp2-14 librtmp1
  libssh2-1 libpsl5 libldap-2.5-0 libsasl2-2 libgssapi-krb5-2 libkrb5-3 libk5crypto3
  libkrb5support0 libkeyutils1 libcom-err2 libgnutls30 libhogweed6 libnettle8 libgmp10
  libidn2-0 libunistring2 libtasn1-6 libp11-kit0 libffi8 libbrotli1 libzstd1 libssl3 zlib1g
  libyaml-cpp-dev libyaml-cpp0.7
  libfmt-dev libfmt9
  nlohmann-json3-dev
  libboost-program-options-dev libboost-program-options1.74-dev libboost-program-options1.74.0
  libboost1.74-dev
  libisal-dev libisal2
  catch2
  libprotobuf-dev libprotobuf32 libprotoc32 protobuf-compiler
  libslurm-dev libslurm38 libmunge2 liblz4-1
  libssl-dev
  libarchive-dev libarchive13 libacl1 libbz2-1.0 liblzma5 libxml2 libicu72
  libjs-chart.js
  pkgconf pkgconf-bin libpkgconf3
)

work=$(mktemp -d "${TMPDIR:-/tmp}/dlx-gpu-bundle-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/debs" "$work/root"
echo "gpu-bundle: downloading ${#packages[@]} Debian packages"
(cd "$work/debs" && apt-get download -q "${packages[@]}" > /dev/null) || {
  echo "gpu-bundle: apt-get download failed: run 'apt-get update' (as root) and try again" >&2
  exit 1
}
for deb in "$work"/debs/*.deb; do
  dpkg-deb -x "$deb" "$work/root"
  dpkg-deb -f "$deb" Package Version | paste -sd= >> "$work/MANIFEST.packages"
done
root=$work/root
multiarch=usr/lib/x86_64-linux-gnu

# The links Debian's update-alternatives makes when these packages are installed (dpkg -x runs no
# maintainer script): the MPI compiler wrappers and launcher, the MPI headers and library, the
# pkg-config files of MPI and serial HDF5.
ln -s mpicc.openmpi "$root/usr/bin/mpicc"
ln -s mpic++.openmpi "$root/usr/bin/mpicxx"
ln -s mpirun.openmpi "$root/usr/bin/mpirun"
ln -s mpiexec.openmpi "$root/usr/bin/mpiexec"
mkdir -p "$root/usr/include/$(basename "$multiarch")"
ln -s "../../lib/$(basename "$multiarch")/openmpi/include" "$root/usr/include/$(basename "$multiarch")/mpi"
ln -s openmpi/lib/libmpi.so "$root/$multiarch/libmpi.so"
ln -s ompi-c.pc "$root/$multiarch/pkgconfig/mpi-c.pc"
ln -s ompi.pc "$root/$multiarch/pkgconfig/mpi.pc"
ln -s hdf5-serial.pc "$root/$multiarch/pkgconfig/hdf5.pc"

# What no check needs: documentation, translations, static libraries, the MPI Fortran/C++
# bindings' modules, Open MPI's components for InfiniBand/OFI/UCX/PSM fabrics (a one-node check
# uses shared memory; their libraries are not in the bundle, and a component that cannot load
# its library only clutters the output).
rm -rf "$root"/usr/share/{doc,man,info,locale,lintian,bash-completion} "$root"/usr/share/hdf5
find "$root" \( \( -name '*.a' ! -name 'libCatch2*' \) -o -name '*.la' -o -name '*.mod' \) -delete
for component in ucx ofi psm psm2 openib usnic verbs portals4 ugni; do
  find "$root/$multiarch/openmpi" -name "mca_*_${component}*.so" -delete 2> /dev/null || true
done
rm -rf "$root/$multiarch/hdf5/openmpi" "$root/$multiarch/hdf5/mpich" "$root/$multiarch/fortran" \
  "$root/$multiarch"/{ossl-modules,engines-3}
# The Fortran, Java and OpenSHMEM bindings of Open MPI and the C++/Fortran/high-level HDF5
# libraries: dlx uses the C APIs.
find "$root/$multiarch" \( -name '*fortran*' -o -name '*mpifh*' -o -name '*usempi*' \
  -o -name '*oshmem*' -o -name '*shmem.h' -o -name '*_java*' -o -name '*hdf5*_cpp*' \
  -o -name '*hdf5*hl*' -o -name 'libbrotlienc*' \) -exec rm -rf {} +

# Boost: keep the headers that Boost.ProgramOptions, Boost.CRC and the project include, found by
# the preprocessor itself, not by guessing.
probe=$work/boost_probe.cpp
grep -rhoE '#include <boost/[^>]+>' --include=*.cpp --include=*.hpp \
  common config searcher store checkpoint launcher spank-plugin export tools examples bench tests \
  | sort -u > "$probe"
echo '#include <boost/program_options.hpp>' >> "$probe"
g++ -std=c++20 -M -I "$root/usr/include" "$probe" -o "$work/boost.deps"
tr ' \\' '\n\n' < "$work/boost.deps" | grep -F "$root/usr/include/boost/" | sort -u \
  > "$work/boost.keep"
find "$root/usr/include/boost" -type f | sort > "$work/boost.all"
comm -23 "$work/boost.all" "$work/boost.keep" | xargs -r rm -f
find "$root/usr/include/boost" -type d -empty -delete

# Smaller shared libraries: the symbols a loader needs stay.
find "$root" -type f -name '*.so*' -exec strip --strip-unneeded {} + 2> /dev/null || true
find "$root/usr/bin" -type f -exec sh -c 'file -b "$1" | grep -q ELF && strip "$1"' _ {} \; \
  2> /dev/null || true

rm -rf "$out" "$out.tar.xz"
mkdir -p "$out/nccl/include"
mv "$root" "$out/root"
cp /usr/local/cuda/include/nccl.h "$out/nccl/include/" 2> /dev/null ||
  echo "gpu-bundle: no /usr/local/cuda/include/nccl.h here; the machine's NCCL must ship one" >&2
{
  echo "# dlx GPU bundle, made $(date -u +%FT%TZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
  sort "$work/MANIFEST.packages"
} > "$out/MANIFEST"
# One compressed file travels (the tree's 2,000 small files would cost more than their bytes).
tar -C "$out" -cJf "$out.tar.xz" MANIFEST root nccl
size_kib=$(( $(stat -c %s "$out.tar.xz") / 1024 ))
echo "gpu-bundle: $out.tar.xz: $((size_kib / 1024)) MiB ($(wc -l < "$work/MANIFEST.packages") packages; unpacked in $out/)"
if [ "$((size_kib / 1024))" -gt "$limit_mib" ]; then
  echo "gpu-bundle: over the ${limit_mib} MiB that may travel beside the working tree" >&2
  exit 1
fi
