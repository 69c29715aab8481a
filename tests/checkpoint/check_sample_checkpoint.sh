#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Writes the sample checkpoint (every dtype) and a damaged copy, then reads them as users will:
# the h5py snippet of docs/checkpoint-format.md exactly as printed there, h5dump, `dlx ckpt`.
# usage: check_sample_checkpoint.sh WRITER H5DUMP FORMAT_DOC DLX WORKDIR
set -eu
writer=$1 h5dump=$2 doc=$3 dlx=$4 workdir=$5
rm -rf "$workdir" && mkdir -p "$workdir"
"$writer" "$workdir"
cd "$workdir"

# The snippet: the python block after the marker line in the doc.
sed -n '/<!-- h5py-snippet -->/,/^```$/p' "$doc" | sed '1,2d;$d' > snippet.py
test -s snippet.py || { echo "no h5py snippet found in $doc" >&2; exit 1; }
cat snippet.py - > check.py <<'PY'
import numpy as np
assert set(tensors) >= {"model/big", "model/brain", "model/half", "optimizer/step_count"}, tensors
assert tensors["model/big"].dtype == np.float32 and tensors["model/big"].shape == (1000,)
assert tensors["model/half"].dtype == np.float16 and tensors["model/half"].shape == (2, 3, 2)
assert tensors["model/brain"].dtype == np.float32 and tensors["model/brain"].shape == (5, 1, 2, 2)
assert tensors["optimizer/step_count"].shape == ()
assert tensors["misc/empty"].shape == (0, 5)
assert step == 100, step
# bfloat16 is the top half of a float32: widen the raw bits and compare with what h5py returns.
with h5py.File("step-100.h5", "r") as f:
    raw = f["tensors/model/brain"].id.get_storage_size()
    assert raw == 40, raw
    assert f["tensors/model/brain"].attrs["dtype"] == b"bfloat16"
    assert f["hparams"].attrs["batch_size"] == 64
    assert f["state"].attrs["data_cursor"] == 4800
print("h5py: ok")
PY
/usr/bin/python3 check.py

dump=$("$h5dump" -A step-100.h5)
for line in 'ATTRIBUTE "format_version"' '"dlx checkpoint"' 'DATASET "big"' 'ATTRIBUTE "crc32c"'; do
  if ! printf '%s\n' "$dump" | grep -qF "$line"; then
    echo "h5dump -A output lacks: $line" >&2
    exit 1
  fi
done
"$h5dump" -d /tensors/model/brain step-100.h5 | grep -q "16-bit little-endian floating-point" || {
  echo "h5dump cannot describe the bfloat16 dataset" >&2; exit 1; }
echo "h5dump: ok"

"$dlx" ckpt verify step-100.h5 >/dev/null
if "$dlx" ckpt verify step-100.h5 step-200.h5 > verify.out; then
  echo "dlx ckpt verify accepted a damaged checkpoint" >&2; exit 1
fi
grep -q "checksum mismatch in tensor 'model/big'" verify.out
"$dlx" ckpt show step-100.h5 | grep -q "model/brain *bfloat16 *\[5, 1, 2, 2\]"
echo "dlx ckpt: ok"
