#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# docs/admin-guide.md's tested command blocks (`<!-- tested: NAME as=root|user -->` before a fenced
# block) and scripts/package-check-root.sh's `doc NAME` calls name the same blocks, each once:
# no command of the guide goes unrun by scripts/package-check.sh, and the script runs no block the
# guide lacks. (The commands themselves run in package-check.sh, on a fresh Debian root.)
# Usage: admin_guide_blocks_test.sh SOURCE_DIR
set -euo pipefail
guide=$1/docs/admin-guide.md script=$1/scripts/package-check-root.sh
failures=0
marked=$(sed -n 's/^<!-- tested: \([a-z-]*\) as=\(root\|user\) -->$/\1/p' "$guide" | sort)
run=$(grep -oE '(^ *(quiet )?|out=\$\()doc [a-z-]+' "$script" | sed 's/.*doc //' | sort)
[ -n "$marked" ] || { echo "FAIL: no tested block in $guide"; exit 1; }
dups=$(uniq -d <<< "$marked")
[ -z "$dups" ] || { echo "FAIL: blocks marked twice in $guide: $dups"; failures=$((failures + 1)); }
# Each marker must be followed (after nothing but itself) by a fenced block.
bad=$(awk '/^<!-- tested: / { marker = $0; line = NR; next }
           marker != "" { if ($0 !~ /^```/) print line ": " marker; marker = "" }' "$guide")
[ -z "$bad" ] || { echo "FAIL: a tested marker not directly before a fenced block: $bad"; failures=$((failures + 1)); }
unrun=$(comm -23 <(uniq <<< "$marked") <(sort -u <<< "$run"))
unknown=$(comm -13 <(uniq <<< "$marked") <(sort -u <<< "$run"))
[ -z "$unrun" ] || { echo "FAIL: tested blocks of the guide that package-check-root.sh never runs: $unrun"; failures=$((failures + 1)); }
[ -z "$unknown" ] || { echo "FAIL: package-check-root.sh runs blocks the guide lacks: $unknown"; failures=$((failures + 1)); }
echo "# admin_guide_blocks: $(wc -l <<< "$marked") blocks, $failures failure(s)"
[ "$failures" -eq 0 ]
