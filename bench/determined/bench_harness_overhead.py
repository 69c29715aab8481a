#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""bench_harness_overhead: the step time of a Determined PyTorchTrial run by dlx's harness
(python/dlx/compat/determined) against the same model, data and optimizer in a plain
dlx.torch.Loop script, both under the real dlx-launch (no Slurm) in alternating pairs
(docs/benchmarks.md, "Determined's APIs"). Needs DLX_LIBRARY (the built libdlx_c.so).

    bench_harness_overhead.py DLX_LAUNCH SOURCE_DIR [--pairs N] [--smoke]

Result (the median over pairs of each pair's ratio; one untimed pair first):
  harness_step_time_ratio   harness's time per batch / plain dlx.torch's        <= 1.02
Each side times its own batches WARMUP..BATCHES inside the training step (overhead_model.py):
everything between two steps (the harness's and the loop's bookkeeping, the DataLoader, the
metrics report) is in the span.
"""
import argparse
import os
import re
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def experiment(root, name, entrypoint, batches):
    directory = os.path.join(root, name)
    os.makedirs(os.path.join(directory, "trials"))
    with open(os.path.join(directory, "experiment.yaml"), "w") as f:
        f.write(f"name: {name}\nentrypoint: {entrypoint}\nseed: 3\n"
                "hyperparameters: {global_batch_size: 64}\n"
                f"searcher: {{name: single, metric: validation_loss, max_length: {{batches: {batches}}}}}\n"
                "checkpoint: {keep_latest: 1}\n")
    return directory


def per_batch(output):
    found = re.search(r"^# span ([0-9.]+) ([0-9]+)$", output, re.MULTILINE)
    assert found, f"no span line in the trainer's output:\n{output}"
    return float(found.group(1)) / int(found.group(2))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("launch")
    parser.add_argument("source")
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--smoke", action="store_true", help="one short pair: the bench runs, nothing measured")
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.source, "tests", "determined_api"))
    from launching import Launcher

    batches = 60 if args.smoke else 400
    pairs = 1 if args.smoke else args.pairs
    os.environ.update(BENCH_BATCHES=str(batches), OMP_NUM_THREADS="1")
    launcher = Launcher(os.path.abspath(args.launch), os.path.abspath(args.source), "BENCH_NOTHING_", cwd=HERE)
    root = tempfile.mkdtemp(prefix="dlx-bench-harness-")
    ratios = []
    for pair in range(pairs + (0 if args.smoke else 1)):
        times = {}
        # The order alternates: a drift of the machine's speed falls on both sides alike.
        sides = [("harness", "overhead_trial:OverheadTrial"), ("loop", "/usr/bin/python3 overhead_loop.py")]
        for name, entrypoint in (sides if pair % 2 == 0 else sides[::-1]):
            directory = experiment(root, f"{name}-{pair}", entrypoint, batches)
            times[name] = per_batch(launcher.one_rank(directory, 0, BENCH_BATCHES=str(batches),
                                                      OMP_NUM_THREADS="1"))
        ratio = times["harness"] / times["loop"]
        print(f"pair {pair}: harness {times['harness'] * 1e3:.3f} ms/batch, plain dlx.torch "
              f"{times['loop'] * 1e3:.3f} ms/batch, ratio {ratio:.4f}" + (" (warm-up)" if pair == 0 and not args.smoke else ""),
              flush=True)
        if pair > 0 or args.smoke:
            ratios.append(ratio)
    print(f"# result: harness_step_time_ratio {statistics.median(ratios):.4f} (target <= 1.02"
          f"{'; smoke run, not a measurement' if args.smoke else ''})")


if __name__ == "__main__":
    main()
