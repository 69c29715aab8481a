#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Writes the sample trial.h5 and reads it back with h5py and h5dump, as users and tools will.
# usage: check_sample_trial.sh WRITER H5DUMP WORKDIR
set -eu
writer=$1 h5dump=$2 workdir=$3
rm -rf "$workdir" && mkdir -p "$workdir"
file=$workdir/trial.h5
"$writer" "$file"

/usr/bin/python3 - "$file" <<'PY'
import math, sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    root = f.attrs
    assert list(root.keys())[:3] == ["format_version", "experiment", "trial_id"], list(root.keys())
    assert root["format_version"] == 3, root["format_version"]
    assert root["metrics_log"] == "metrics.1.log", root["metrics_log"]
    assert root["experiment"] == "mnist-asha", root["experiment"]
    assert isinstance(root["state"], str) and root["state"] == "completed"
    assert root["trial_id"] == 17 and root["world_size"] == 4
    hp = f["hparams"].attrs
    assert list(hp.keys()) == ["optim.lr", "batch_size", "seed", "model.arch", "use_amp",
                               "shuffle"], list(hp.keys())
    assert hp["optim.lr"] == 0.003 and hp["optim.lr"].dtype.kind == "f"
    assert hp["batch_size"] == 128 and hp["batch_size"].dtype == "int64"
    assert hp["seed"] == -42
    assert hp["model.arch"] == "résnet-18", hp["model.arch"]
    assert hp["use_amp"] == 1 and hp["use_amp"].dtype == "int8"
    assert hp["shuffle"] == 0
    train = f["metrics/training"]
    # Written whole, then one row appended (format 3: chunked, extendible datasets).
    assert list(train["steps"][:]) == [100, 200, 300, 400]
    assert train["wall_time"].dtype == "float64" and len(train["wall_time"]) == 4
    assert list(train["loss"][:]) == [2.5, 1.25, 0.75, 0.5]
    assert train["loss"].chunks is not None and train["loss"].maxshape == (None,), train["loss"]
    assert train["loss"].compression is None
    acc = train["accuracy"][:]
    assert acc[0] == 0.1 and math.isnan(acc[1]) and acc[2] == 0.6 and math.isnan(acc[3]), acc
    val = f["metrics/validation"]
    assert list(val["steps"][:]) == [200, 300]
    assert list(val["val_loss"][:]) == [1.5, 1.0]
print("h5py: ok")
PY

dump=$("$h5dump" -A "$file")
for line in 'ATTRIBUTE "optim.lr"' 'ATTRIBUTE "experiment"' '"mnist-asha"' 'DATASET "steps"'; do
  if ! printf '%s\n' "$dump" | grep -qF "$line"; then
    echo "h5dump -A output lacks: $line" >&2
    printf '%s\n' "$dump" >&2
    exit 1
  fi
done
echo "h5dump: ok"
