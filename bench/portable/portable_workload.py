# SPDX-License-Identifier: Apache-2.0
"""One round of bench_portable_c.py in a process of its own, with the libdlx_c that DLX_LIBRARY
names: REPORTS metric reports of 4 metrics, a checkpoint of MIB MiB of float32 tensors saved (to
its completion on disk), then resumed by a second trial (read and every block's CRC checked).
Prints the seconds of each as one JSON line.
    portable_workload.py DIR MIB REPORTS"""
from __future__ import annotations

import json
import os
import sys
import time

directory, mib, reports = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.environ.update({
    "DLX_EXPERIMENT_DIR": directory, "DLX_TRIAL_ID": "1", "DLX_HPARAMS": "{}",
    "DLX_CHECKPOINT_DIR": os.path.join(directory, "trials", "1", "checkpoints"),
    "DLX_LATEST_CHECKPOINT": "", "RANK": "0", "WORLD_SIZE": "1",
})
import numpy  # noqa: E402

import dlx  # noqa: E402

rng = numpy.random.default_rng(5)
tensors = {f"model/layer{i}/weight": rng.standard_normal(mib * 2**18 // 8, dtype=numpy.float32)
           for i in range(8)}
out = {}
with dlx.Trial() as trial:
    metrics = {"loss": 0.0, "accuracy": 0.0, "lr": 0.1, "grad_norm": 1.0}
    start = time.perf_counter()
    for step in range(1, reports + 1):
        metrics["loss"] = 1.0 / step
        trial.report_training(step, metrics)
    out["report_s"] = time.perf_counter() - start
    start = time.perf_counter()
    trial.save_checkpoint(reports, tensors)
    assert trial.wait_for_checkpoint(timeout=600)
    out["save_s"] = time.perf_counter() - start
    trial.finish()
with dlx.Trial() as trial:
    start = time.perf_counter()
    resumed = trial.resume()
    out["load_s"] = time.perf_counter() - start
    assert resumed is not None and sorted(resumed.tensors) == sorted(tensors)
    trial.finish()
print(json.dumps(out))
