#!/usr/bin/env bash
# The built plugin passes every check of check_hardening.sh, and the same checks fail, one by one,
# on unhardened_probe.so (built here without any hardening and exporting a helper): a check that
# passed the probe could not fail. Usage: hardening_test.sh PLUGIN PROBE
set -uo pipefail
plugin=$1 probe=$2
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
exit $status
