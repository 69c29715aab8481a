#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_hardening.sh FILE: the hardening of a built SPANK plugin, read with readelf (binutils).
# One line per property, "ok" or "FAIL: why"; exit status 1 when any fails.
#   relro      a GNU_RELRO segment (the GOT and friends read-only after relocation)
#   bind-now   BIND_NOW (FLAGS BIND_NOW or FLAGS_1 NOW): every relocation done at load, so all of
#              the RELRO part can be made read-only
#   ssp        __stack_chk_fail referenced (-fstack-protector-strong put canaries somewhere)
#   fortify    a __*_chk function referenced (-D_FORTIFY_SOURCE replaced some libc call)
#   exports    the defined dynamic symbols are slurm_spank_* and plugin_name, plugin_type,
#              plugin_version only (spank-plugin/dlx_spank.map and -fvisibility=hidden)
set -uo pipefail
file=$1
[ -f "$file" ] || { echo "FAIL: $file: no such file"; exit 1; }
failed=0
check() {  # check NAME CONDITION-OUTPUT-IS-EMPTY-MEANS-FAIL MESSAGE
  if [ -n "$2" ]; then echo "ok: $1"; else echo "FAIL: $1: $3"; failed=1; fi
}
headers=$(readelf -lW "$file")
dynamic=$(readelf -dW "$file")
symbols=$(readelf --dyn-syms -W "$file")
check relro "$(grep -w GNU_RELRO <<<"$headers")" "no GNU_RELRO segment (link with -Wl,-z,relro)"
check bind-now "$(grep -E '\(FLAGS\).*BIND_NOW|\(FLAGS_1\).*\bNOW\b' <<<"$dynamic")" \
  "neither FLAGS BIND_NOW nor FLAGS_1 NOW (link with -Wl,-z,now)"
# Undefined symbols: readelf prints Ndx UND; the name may carry @GLIBC_x.y.
undefined=$(awk '$7 == "UND" {print $8}' <<<"$symbols" | sed 's/@.*//')
check ssp "$(grep -x '__stack_chk_fail' <<<"$undefined")" \
  "__stack_chk_fail is not referenced (compile with -fstack-protector-strong)"
check fortify "$(grep -E '^__[a-z0-9_]+_chk$' <<<"$undefined" | grep -v '^__stack_chk')" \
  "no __*_chk function is referenced (compile with -O1 or more and -D_FORTIFY_SOURCE=2)"
# Defined global or weak symbols (not UND, not LOCAL), without a version suffix.
exported=$(awk 'NR > 3 && $7 != "UND" && ($5 == "GLOBAL" || $5 == "WEAK" || $5 == "UNIQUE") {print $8}' \
  <<<"$symbols" | sed 's/@.*//' | sort -u)
unexpected=$(grep -vE '^(slurm_spank_[a-z_]+|plugin_name|plugin_type|plugin_version)$' <<<"$exported")
check exports "$([ -n "$exported" ] && [ -z "$unexpected" ] && echo yes)" \
  "exports more than slurm_spank_* and the plugin symbols: $(echo $unexpected | cut -c1-300) (are the version script and -fvisibility=hidden applied?)"
echo "# exported: $(echo $exported)"
exit $failed
