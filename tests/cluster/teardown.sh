#!/usr/bin/env bash
# Fixture cleanup: stop the daemons the setup started (by PID, via dlx cluster down).
set -euo pipefail
: "${DLX_TEST_STATE:?}"
if [ -x "$DLX_TEST_STATE/prefix/bin/dlx" ]; then
  "$DLX_TEST_STATE/prefix/bin/dlx" cluster down --state-dir "$DLX_TEST_STATE/cluster"
fi
