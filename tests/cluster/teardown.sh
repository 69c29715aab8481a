#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fixture cleanup: stop the daemons the setup started (by PID, via dlx cluster down).
set -euo pipefail
: "${DLX_TEST_STATE:?}"
[ -e "$DLX_TEST_STATE" ] || exit 0
# Root runs the dlx installed there: only from a state directory of root's own (setup.sh's rule).
source "$(dirname "$0")/../../scripts/private_dir.sh"
owned_dir_check "$DLX_TEST_STATE" > /dev/null || exit 1
if [ -x "$DLX_TEST_STATE/prefix/bin/dlx" ]; then
  "$DLX_TEST_STATE/prefix/bin/dlx" cluster down --state-dir "$DLX_TEST_STATE/cluster"
fi
