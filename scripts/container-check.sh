#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The container tests with the real Apptainer, and Enroot where its source is given, beside crun
# and Podman (docs/containers.md). Neither is a bookworm package, so each is installed as a test
# rig: Debian unstable's Apptainer with a private glibc in /opt/dlx-apptainer
# (tests/container/install_apptainer.sh), Enroot built from NVIDIA's source tree into
# /opt/dlx-enroot (tests/container/install_enroot.sh). Then cluster.container runs with every
# runtime: the probe (code copy, staged data, bind mounts, HOME, `import dlx`, a checkpoint round
# trip, dlx logs), the DDP example requeued mid-run and resumed bit-identical to a bare run, and
# Apptainer running an OCI layout itself.
#
#   sudo scripts/container-check.sh [--enroot-source DIR] [BUILD_DIR]   (default: build; 5-10 min)
#
# Not in CI: it fetches Debian unstable's packages. Run it as root, on the machine of the build.
set -euo pipefail
cd "$(dirname "$0")/.."
enroot_source=
if [ "${1:-}" = --enroot-source ]; then enroot_source=$(realpath "${2:?--enroot-source needs a directory}"); shift 2; fi
build=${1:-build}
[ "$(id -u)" = 0 ] || { echo "container-check.sh: run it as root (it installs packages and starts the test cluster)" >&2; exit 1; }
[ -f "$build/CTestTestfile.cmake" ] || { echo "container-check.sh: no build in $build (scripts/build.sh)" >&2; exit 1; }

runtimes="crun podman apptainer"
bash tests/container/install_apptainer.sh /opt/dlx-apptainer
# An unprivileged Apptainer mounts SIF images with squashfuse, through /dev/fuse. Debian's udev
# makes that 0666; a machine without udev (a VM or container image) may leave it 0600 for root.
if [ "$(stat -c %a /dev/fuse)" != 666 ]; then
  echo "container-check.sh: /dev/fuse is mode $(stat -c %a /dev/fuse); setting 0666, as Debian's udev rules do"
  chmod 0666 /dev/fuse
fi
if [ -n "$enroot_source" ]; then
  bash tests/container/install_enroot.sh "$enroot_source" /opt/dlx-enroot
  runtimes+=" enroot"
else
  echo "container-check.sh: Enroot not tested (no --enroot-source)"
fi
DLX_TEST_CONTAINER_RUNTIMES=${DLX_TEST_CONTAINER_RUNTIMES:-$runtimes} \
DLX_TEST_APPTAINER=/opt/dlx-apptainer/usr/bin/apptainer DLX_TEST_ENROOT=/opt/dlx-enroot/bin/enroot \
  ctest --test-dir "$build" -R '^cluster\.container$' -V
