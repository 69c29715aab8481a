#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The built plugin passes every check of check_hardening.sh, and the same checks fail, one by one,
# on unhardened_probe.so (built here without any hardening and exporting a helper): a check that
# passed the probe could not fail. Also: the plugin loads neither libcrypto nor libarchive (the data
# cache's key and unpacking; the plugin links only the data library's size walk), a check shown to
# find them in the `dlx` program, which stages. Usage: hardening_test.sh PLUGIN PROBE DLX
set -uo pipefail
plugin=$1 probe=$2 dlx_program=$3
checker=$(dirname "$0")/check_hardening.sh
status=0
echo "# $plugin"
bash "$checker" "$plugin" || { echo "FAIL: the plugin is not hardened (see above)"; status=1; }
echo "# $probe (deliberately unhardened: every check must fail)"
probe_report=$(bash "$checker" "$probe")
echo "$probe_report"
for property in relro bind-now ssp fortify exports; do
  grep -q "^FAIL: $property:" <<<"$probe_report" ||
    { echo "FAIL: the $property check passed an unhardened object: it cannot fail"; status=1; }
done
staging_libraries() { readelf -dW "$1" | grep -oE 'NEEDED.*\[(libcrypto|libarchive)\.so[^]]*\]'; }
if found=$(staging_libraries "$plugin"); then
  echo "FAIL: the plugin needs the data cache's libraries (link only source_bytes; see data/CMakeLists.txt): $found"
  status=1
else
  echo "ok: the plugin needs neither libcrypto nor libarchive"
fi
[ "$(staging_libraries "$dlx_program" | wc -l)" -eq 2 ] ||
  { echo "FAIL: the library check does not find libcrypto and libarchive in $dlx_program: it cannot fail"; status=1; }
exit $status
