#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `dlx convert-determined` on a Determined experiment file, then `dlx validate` on what it printed:
# the output is a valid dlx file with no Determined key left (no warning), the header lists what
# was mapped and dropped, and the translation means the same (nodes, GPUs, seed, environment).
# A file with several mistakes reports them all, sorted by line, from both commands.
# usage: dlx_convert_determined_test.sh DLX
set -uo pipefail
dlx=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
export -n SLURM_CONF DLX_SITE_CONFIG

cat >"$work/site.yaml" <<'YAML'
defaults:
  resources: {gpus_per_node: 4}
YAML
cat >"$work/det.yaml" <<'YAML'
name: MNIST PyTorch (adaptive)
description: converted in a test
labels: [mnist]
entrypoint: python3 train.py --epochs 3
bind_mounts:
  - host_path: /data
    container_path: /data
checkpoint_storage:
  type: shared_fs
  host_path: /tmp
  save_trial_latest: 2
environment:
  image: determinedai/environments:cuda-11.8
  environment_variables: [NCCL_DEBUG=INFO]
reproducibility: {experiment_seed: 42}
resources: {slots_per_trial: 8}
max_restarts: 3
hyperparameters:
  global_batch_size: 64
  layers: [128, 64]
  optim.lr: {type: log, minval: -4, maxval: -1}
  head: {type: const, val: {kind: linear, dims: [10]}}
searcher:
  name: random
  metric: validation_loss
  max_trials: 4
  max_length: {batches: 100}
YAML

"$dlx" convert-determined --site-config "$work/site.yaml" "$work/det.yaml" >"$work/dlx.yaml" 2>"$work/err" ||
  fail "convert-determined: exit $?: $(cat "$work/err")"
out=$(cat "$work/dlx.yaml")
for line in "# dlx experiment file converted from the Determined file $work/det.yaml" \
            "#   resources.slots_per_trial: 8 -> resources: nodes_per_trial 2, tasks_per_node 4, gpus_per_node 4" \
            "#   reproducibility.experiment_seed: 42 -> seed" \
            "#   environment.image -> container.image" \
            "#   bind_mounts -> container.bind_mounts" \
            "name: MNIST-PyTorch-adaptive" "seed: 42" "max_restarts: 3" \
            "container:" '  image: "determinedai/environments:cuda-11.8"' \
            '    - {host_path: "/data", container_path: "/data", read_only: false}'; do
  grep -qxF -- "$line" <<<"$out" || fail "convert-determined output has no line '$line':"$'\n'"$out"
done
grep -qF '"NCCL_DEBUG": "INFO"' <<<"$out" || grep -qF 'NCCL_DEBUG: "INFO"' <<<"$out" ||
  fail "the environment variable is not in the output: $out"
grep -qE '^  nodes_per_trial: 2$' <<<"$out" || fail "nodes_per_trial 2 missing: $out"

# The output validates, with no warning: nothing Determined-only is left in it.
"$dlx" validate --site-config "$work/site.yaml" "$work/dlx.yaml" >"$work/vout" 2>"$work/verr" ||
  fail "dlx validate on the converted file: $(cat "$work/vout" "$work/verr")"
[ ! -s "$work/verr" ] || fail "dlx validate warned on the converted file: $(cat "$work/verr")"
grep -qF "valid: 4 trials" "$work/vout" || fail "dlx validate: $(cat "$work/vout")"
# The original validates too, with its one warning line.
"$dlx" validate --site-config "$work/site.yaml" "$work/det.yaml" >"$work/vout" 2>"$work/verr" ||
  fail "dlx validate on the Determined file: $(cat "$work/vout" "$work/verr")"
[ "$(wc -l <"$work/verr")" = 1 ] && grep -qF "warning: dlx ignores these Determined keys: checkpoint_storage (checkpoints go to the experiment directory)" "$work/verr" ||
  fail "dlx validate: not one warning line: $(cat "$work/verr")"

# Several mistakes: all of them, sorted by line, from validate and from convert-determined.
cat >"$work/bad.yaml" <<'YAML'
name: bad
entrypoint: []
resources: {slots_per_trail: 2}
searcher: {name: random, metric: loss, max_trials: 0}
seeed: 1
YAML
"$dlx" validate "$work/bad.yaml" >"$work/vout" 2>"$work/verr"
rc=$?
[ "$rc" = 1 ] || fail "dlx validate bad.yaml: exit $rc, not 1"
expected="$work/bad.yaml:2:13: entrypoint: must be a non-empty command string or list of arguments
$work/bad.yaml:3:13: resources.slots_per_trail: unknown key in resources (did you mean 'slots_per_trial'?)
$work/bad.yaml:4:52: searcher.max_trials: must be between 1 and 1000000, got 0
$work/bad.yaml:5:1: seeed: unknown key at the top level (did you mean 'seed'?)"
[ "$(wc -l <"$work/verr")" = 4 ] || fail "dlx validate bad.yaml: not 4 lines: $(cat "$work/verr")"
while IFS= read -r want; do
  grep -qF -- "$want" "$work/verr" || fail "dlx validate bad.yaml: no '$want' in: $(cat "$work/verr")"
done <<<"$expected"
[ "$(cut -d: -f2 "$work/verr" | tr '\n' ' ')" = "2 3 4 5 " ] || fail "not sorted by line: $(cat "$work/verr")"
"$dlx" validate --json "$work/bad.yaml" >"$work/vout" 2>"$work/verr"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))[0]; assert len(r["errors"]) == 4, r; assert r["error"]["line"] == 2, r' \
  "$work/vout" || fail "dlx validate --json bad.yaml: $(cat "$work/vout")"
"$dlx" convert-determined "$work/bad.yaml" >"$work/cout" 2>"$work/cerr"
rc=$?
[ "$rc" = 1 ] && [ ! -s "$work/cout" ] && [ "$(wc -l <"$work/cerr")" = 4 ] ||
  fail "convert-determined bad.yaml: exit $rc: $(cat "$work/cout" "$work/cerr")"

[ "$failed" = 0 ] || exit 1
echo "ok"
