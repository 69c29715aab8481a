#!/usr/bin/env bash
# The experiment journal under real concurrency: 32 processes spread over the three slurmd nodes
# append at once to one journal on the cluster's shared storage; it must hold exactly the events
# posted, none torn, none twice.
source "$(dirname "$0")/lib.sh"
: "${DLX_JOURNAL_WRITER:?the journal_writer test program}"
dir=$(storage_root)/journal-test-$$
mkdir -p "$dir"
writer=$dir/journal_writer
cp "$DLX_JOURNAL_WRITER" "$writer"  # a copy every node can run (the build tree may be private)
chmod 0755 "$writer"
srun --quiet -N3 -n32 --overcommit "$writer" append "$dir/journal" 25
result=$("$writer" check "$dir/journal" 800) || fail "journal after 32 concurrent writers: $result"
expect_contains "writers on every node" "$result" "nodes 3 "
note "32 writers on 3 nodes: $result"
rm -rf "$dir"
