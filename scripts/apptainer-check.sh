#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The container tests with the real Apptainer beside crun and Podman (docs/containers.md): installs
# Debian's Apptainer into /opt/dlx-apptainer (tests/container/install_apptainer.sh: a test rig,
# since bookworm has no Apptainer package), then runs cluster.container with
# DLX_TEST_CONTAINER_RUNTIMES="crun podman apptainer": the probe (code copy, staged data, bind
# mounts, `import dlx`, a checkpoint round trip, dlx logs), the DDP example requeued mid-run and
# resumed bit-identical to a bare run, and an OCI layout run by Apptainer itself.
#
#   sudo scripts/apptainer-check.sh [BUILD_DIR]      (default: build; about 5 minutes)
#
# Not in CI: it fetches Debian unstable's packages. Run it as root, on the machine of the build.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
apptainer_dir=${DLX_APPTAINER_DIR:-/opt/dlx-apptainer}
[ "$(id -u)" = 0 ] || { echo "apptainer-check.sh: run it as root (it installs packages and starts the test cluster)" >&2; exit 1; }
[ -f "$build/CTestTestfile.cmake" ] || { echo "apptainer-check.sh: no build in $build (scripts/build.sh)" >&2; exit 1; }

bash tests/container/install_apptainer.sh "$apptainer_dir"
# An unprivileged Apptainer mounts SIF images with squashfuse, through /dev/fuse. Debian's udev
# makes that 0666; a machine without udev (a VM or container image) may leave it 0600 for root.
if [ "$(stat -c %a /dev/fuse)" != 666 ]; then
  echo "apptainer-check.sh: /dev/fuse is mode $(stat -c %a /dev/fuse); setting 0666, as Debian's udev rules do"
  chmod 0666 /dev/fuse
fi
DLX_TEST_CONTAINER_RUNTIMES=${DLX_TEST_CONTAINER_RUNTIMES:-crun podman apptainer} \
DLX_TEST_APPTAINER=$apptainer_dir/usr/bin/apptainer \
  ctest --test-dir "$build" -R '^cluster\.container$' -V
