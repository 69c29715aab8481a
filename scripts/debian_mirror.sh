# SPDX-License-Identifier: Apache-2.0
# Sourced by the scripts that make Debian roots (scripts/package-check.sh, scripts/portable-c.sh):
# the Debian mirror this machine's apt installs from, read from /etc/apt/sources.list* at run
# time (never written into the tree).
#   debian_mirror            prints its .../debian URI, or nothing
#   debian_security_mirror   prints its .../debian-security URI, or nothing
debian_sources() { cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2> /dev/null || true; }
debian_mirror() { debian_sources | grep -ohE 'https?://[^[:space:]]+/debian/?([[:space:]]|$)' | head -1 | tr -d '[:space:]'; }
debian_security_mirror() { debian_sources | grep -ohE 'https?://[^[:space:]]+/debian-security/?([[:space:]]|$)' | head -1 | tr -d '[:space:]'; }
