#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a dataset for examples/pytorch/ddp.py to stage: DIR/dataset.pt, a dict of two float32
tensors, x [N, F] and y [N, 1] (label = [x.w + 0.1 + noise > 0]), the same for the same seed.

    /usr/bin/python3 examples/pytorch/make_dataset.py examples/pytorch/dataset [--samples 65536] [--seed 1]

then `sbatch --dl-experiment=examples/pytorch/ddp_data.yaml examples/pytorch/job.sh` stages the
directory once per node and the trials read it from DLX_DATA_DIR."""
import argparse
import os

import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", help="where dataset.pt goes (created)")
    parser.add_argument("--samples", type=int, default=65536)
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.samples < 8 or args.features < 1:
        parser.error("--samples must be at least 8 and --features at least 1")
    g = torch.Generator().manual_seed(args.seed)
    x = torch.randn(args.samples, args.features, generator=g)
    w = torch.randn(args.features, 1, generator=g)
    y = ((x @ w + 0.1 + 0.25 * torch.randn(args.samples, 1, generator=g)) > 0).float()
    os.makedirs(args.directory, exist_ok=True)
    path = os.path.join(args.directory, "dataset.pt")
    temporary = path + ".tmp"
    torch.save({"x": x, "y": y}, temporary)
    os.replace(temporary, path)  # a half-written file is never staged as the dataset
    print(f"make_dataset: {args.samples} examples of {args.features} features in {path}")


if __name__ == "__main__":
    main()
