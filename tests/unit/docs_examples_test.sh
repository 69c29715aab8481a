#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Docs and parser must not drift: every ```yaml block in README.md and docs/*.md, and every
# examples/*.yaml, is validated by the real `dlx validate`. A block whose first line is
# "# site config" is checked as a site-defaults file instead (by using it with a minimal
# experiment).
set -euo pipefail
dlx=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

checked=0
failed=0
extract() {  # extract FILE: writes each yaml block of FILE to $work/<n>.yaml
  awk -v dir="$work" -v base="$(basename "$1" .md)" '
    /^```yaml$/ { inside = 1; n++; out = dir "/" base "-" n ".yaml"; next }
    /^```$/ { inside = 0; next }
    inside { print > out }' "$1"
}
for doc in "$source_dir"/README.md "$source_dir"/docs/*.md; do extract "$doc"; done
cp "$source_dir"/examples/*.yaml "$work"/

minimal=$work/minimal.experiment
printf 'name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\n' > "$minimal"
for block in "$work"/*.yaml; do
  if head -1 "$block" | grep -q '^# site config'; then
    result=$(DLX_SITE_CONFIG="$block" "$dlx" validate "$minimal" 2>&1) || { echo "FAIL: $(basename "$block"): $result"; failed=$((failed + 1)); }
  else
    result=$(env -u DLX_SITE_CONFIG -u SLURM_CONF "$dlx" validate "$block" 2>&1) ||
      { echo "FAIL: $(basename "$block"): $result"; failed=$((failed + 1)); }
  fi
  checked=$((checked + 1))
done
echo "# $checked documented examples checked, $failed failed"
[ "$checked" -ge 5 ] || { echo "FAIL: expected at least 5 examples, found $checked"; exit 1; }
[ "$failed" = 0 ]
