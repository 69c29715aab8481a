#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The experiment journal under real concurrency: 32 processes spread over the three slurmd nodes
# append at once to one journal on the cluster's shared storage; it must hold exactly the events
# posted, none torn, none twice. Then 32 processes run ASHA trials through the searcher's
# coordinator at once (each asks for its ticket's work and reports at every rung): every
# decision is recorded once, and replaying the journal reproduces every recorded answer and
# equals the live state.
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

cat > "$dir/experiment.yaml" <<'YAML'
name: journal-asha
entrypoint: [unused]
seed: 9
hyperparameters:
  x: {type: double, minval: 0, maxval: 1}
searcher: {name: async_halving, metric: loss, max_trials: 32, divisor: 2, max_rungs: 3,
           max_length: {batches: 8}, stop_once: true}
YAML
srun --quiet -N3 -n32 --overcommit "$writer" search "$dir" 0 ||
  fail "a searcher process failed"
result=$("$writer" search-check "$dir" 32) || fail "searcher journal after 32 concurrent trials: $result"
expect_contains "replay equals live" "$result" "replay_equals_live 1"
note "32 trials through the coordinator on 3 nodes: $result"
rm -rf "$dir"
