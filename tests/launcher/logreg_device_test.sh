#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The example trainer's `device` hyperparameter: "cpu" trains on the CPU; "tpu" and (on a machine
# without a GPU) "gpu" are refused with a message naming the value and the choices, and exit 78:
# a configuration error, which dlx-launch does not retry.
#   logreg_device_test.sh TRAINER
set -euo pipefail
trainer=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/dlx-device-XXXXXX")
trap 'rm -rf "$dir"' EXIT
run() {  # run NAME DEVICE: the trainer's stderr; its status in $dir/NAME.status
  local status=0
  DLX_EXPERIMENT_DIR=$dir/$1 DLX_TRIAL_ID=0 \
    DLX_HPARAMS="{\"learning_rate\":0.1,\"batch_size\":16,\"epochs\":1,\"device\":\"$2\"}" \
    mpirun -n 1 "$trainer" 2> "$dir/$1.err" > /dev/null || status=$?
  echo "$status" > "$dir/$1.status"
}
expect() {  # expect NAME STATUS TEXT
  [ "$(cat "$dir/$1.status")" = "$2" ] || { echo "FAIL: $1 exited $(cat "$dir/$1.status"), not $2: $(cat "$dir/$1.err")"; exit 1; }
  [ -z "$3" ] || grep -qF "$3" "$dir/$1.err" || { echo "FAIL: $1: no [$3] in: $(cat "$dir/$1.err")"; exit 1; }
}
mkdir -p "$dir/cpu" "$dir/tpu" "$dir/gpu"
run cpu cpu && expect cpu 0 ""
run tpu tpu && expect tpu 78 "hyperparameter 'device' is \"tpu\"; use \"auto\", \"cpu\" or \"gpu\""
if command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; then
  echo "a GPU is visible: not checking the no-GPU message"
else
  run gpu gpu && expect gpu 78 "hyperparameter 'device' is \"gpu\" but this build has no CUDA kernels or no GPU is visible"
fi
echo "device choice: ok"
