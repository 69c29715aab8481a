#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian bookworm packages dlx needs to build, test and run its local cluster.
# Idempotent; needs root (or sudo). Package names only: nothing is downloaded from elsewhere.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  # Slurm 22.05 (controller, node daemon, SPANK headers) and munge
  slurm-wlm slurmctld slurmd slurm-client libslurm-dev slurm-wlm-plugins-dev munge libmunge-dev
  # PMIx for srun --mpi=pmix (mpi_pmix_v4.so dlopens libpmix.so from libpmix-dev)
  libpmix-dev
  # MPI, HDF5 (serial C/C++), config and CLI libraries, tests
  libopenmpi-dev openmpi-bin libhdf5-dev hdf5-tools
  libyaml-cpp-dev libboost-program-options-dev libboost-dev libfmt-dev nlohmann-json3-dev catch2
  # data staging (data/): SHA-256 keys through OpenSSL's libcrypto, tar archives through
  # libarchive; squashfs-tools (unsquashfs) unpacks staged squashfs images, and its tests make one
  libssl-dev libarchive-dev squashfs-tools
  # Intel ISA-L: hardware CRC-32C for checkpoint checksums
  libisal-dev
  # Protocol Buffers: `dlx export tensorboard` encodes TensorBoard's Events (export/proto), and its
  # test decodes them with classes protoc generates for Python, checking CRCs with crcmod
  libprotobuf-dev protobuf-compiler python3-protobuf python3-crcmod
  # Slurm's job_submit/lua and our tests of it; h5py for the user-facing read-back tests
  lua5.3 python3-h5py python3-numpy
  # the install test reads the Environment Modules file (tests/install/install_test.sh)
  tcl
  # the PyTorch DDP example (examples/pytorch) and its cluster test, with /usr/bin/python3
  python3-torch
  # container runtimes the trials may run in (docs/containers.md) and their cluster test: Podman
  # and the OCI runtimes runc and crun (Apptainer and Enroot are not Debian packages)
  podman runc crun
  # the parser's fuzz target: clang with libFuzzer and the sanitizer runtimes
  clang libclang-rt-14-dev
  # `dlx report`: Chart.js, embedded into dlx at build time (nothing needed at run time); its test
  # renders the pages in headless Chromium (tests only)
  libjs-chart.js chromium
  # Debian packages (scripts/package.sh, ctest -L package): debhelper and dh-python build them,
  # lintian judges them; scripts/package-check.sh installs them into a debootstrap root
  debhelper dh-python lintian debootstrap
  # the portable libdlx_c for container images (scripts/portable-c.sh): nasm and the autotools
  # build ISA-L from its Debian sources, dpkg-dev unpacks them; pyelftools reads the library's
  # symbol versions (tests/portable/, also in CI)
  nasm autoconf automake libtool dpkg-dev python3-pyelftools
  # cluster tooling: hostname, ps, ip
  procps iproute2 hostname util-linux
)

sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
