#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The PyTorch DDP example on a staged dataset, as a trial runs it (dlx-launch with
# DLX_EXPERIMENT_DIR + DLX_TRIAL_ID, one rank, gloo): make_dataset.py writes the dataset, the
# experiment stages it with `data: stage:`, and ddp.py trains on the node-local copy named by
# DLX_DATA_DIR, not on the source; the second trial reuses the copy. The cluster test
# (cluster.data_staging) shows the staging across nodes and users; this one, the PyTorch side.
#   torch_staged_data_test.sh DLX_LAUNCH SOURCE_DIR
set -euo pipefail
launch=$1 source_dir=$2
work=$(mktemp -d -t dlx-torch-data.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# gloo's rendezvous port for the one-rank trainer: its own, as dlx-launch's default outside Slurm is
# one fixed port that another test's trainer may hold at the same time.
free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

/usr/bin/python3 "$source_dir/examples/pytorch/make_dataset.py" "$work/shared/dataset" --samples 2048 --seed 5
mkdir -p "$work/experiment" "$work/local"
cat > "$work/experiment/experiment.yaml" <<YAML
name: torch-staged-data
entrypoint: [/usr/bin/python3, $source_dir/examples/pytorch/ddp.py]
seed: 3
hyperparameters: {learning_rate: 0.01, batch_size: 64, epochs: 1}
searcher: {name: random, metric: accuracy, smaller_is_better: false, max_trials: 2}
data: {stage: [$work/shared/dataset], to: $work/local}
YAML

trial() {  # trial ID: runs trial ID of the experiment, prints its output
  local out
  out=$(DLX_EXPERIMENT_DIR=$work/experiment DLX_TRIAL_ID=$1 MASTER_PORT=$(free_port) "$launch" 2>&1) ||
    fail "trial $1 failed: $out"
  echo "$out"
}
first=$(trial 0)
echo "$first"
cache=$work/local/dlx-$(id -u)/data
grep -q "dlx-launch: data on .*: $work/shared/dataset: copied " <<< "$first" || fail "trial 0 did not stage the dataset"
line=$(grep "^ddp: 1 ranks" <<< "$first") || fail "ddp.py printed no start line"
case "$line" in
  *"2048 examples from $cache/"*"/dataset.pt, starting"*) ;;
  *) fail "ddp.py did not read the node-local copy: $line" ;;
esac
second=$(trial 1)
echo "$second"
grep -q ": reused " <<< "$second" || fail "trial 1 did not reuse the copy"
grep -q "2048 examples from $cache/" <<< "$second" || fail "trial 1 did not read the copy"

# Without data: the example keeps its synthetic set.
sed -i '/^data:/d' "$work/experiment/experiment.yaml"
third=$(trial 0)
grep -q "^ddp: 1 ranks.*4096 examples from synthetic" <<< "$third" || fail "without data: $third"

# A staged directory without dataset.pt: the trainer says what is missing and how to make it.
mkdir -p "$work/shared/empty"
echo "data: {stage: [$work/shared/empty], to: $work/local}" >> "$work/experiment/experiment.yaml"
if out=$(DLX_EXPERIMENT_DIR=$work/experiment DLX_TRIAL_ID=1 MASTER_PORT=$(free_port) "$launch" 2>&1); then fail "no dataset.pt: it ran: $out"; fi
grep -q "dataset.pt is missing: stage a directory holding dataset.pt (python3 examples/pytorch/make_dataset.py DIR writes one)" <<< "$out" ||
  fail "no dataset.pt: $out"
echo "torch staged data: ok"
