# SPDX-License-Identifier: Apache-2.0
"""python3 -m determined.launch.torch_distributed [--trust] [[TORCH_OVERRIDES...] --] COMMAND...

Determined's launcher started torch.distributed.run with one process per slot. Under dlx every
rank is a Slurm task that dlx-launch has started already, with torchrun's variables (RANK,
LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), so this runs COMMAND in this process:
  --trial module:Class     Determined's older form: dlx's PyTorchTrial harness
  script.py ARGS...        the script, with this Python
  python3 ARGS..., other   the command as it is
Options before `--` were torch.distributed.run's (--nproc_per_node, --max_restarts...): the
placement and the restarts are Slurm's and dlx's here, so they are ignored, and named."""
from __future__ import annotations

import os
import sys
from typing import List, Sequence

import dlx


def command_of(argv: Sequence[str]) -> List[str]:
    args = list(argv)
    if args and args[0] == "--trust":
        args = args[1:]
    if "--" in args:
        overrides, args = args[:args.index("--")], args[args.index("--") + 1:]
        if overrides:
            print(f"determined.launch.torch_distributed on dlx: ignoring torch.distributed.run's {' '.join(overrides)} "
                  "(dlx-launch has started every rank)", file=sys.stderr, flush=True)
    if not args:
        raise dlx.ConfigError("determined.launch.torch_distributed: no command to run: give it as "
                              "`python3 -m determined.launch.torch_distributed python3 train.py`")
    if args[0] == "--trial":
        if len(args) != 2:
            raise dlx.ConfigError(f"determined.launch.torch_distributed: --trial takes one module:Class, not "
                                  f"{' '.join(args[1:]) or 'nothing'}")
        return [sys.executable, "-m", "determined.exec.harness", args[1]]
    if args[0].startswith("-"):
        raise dlx.ConfigError(f"determined.launch.torch_distributed: {args[0]} before the command: put "
                              "torch.distributed.run's options before `--` (they are ignored under dlx)")
    if args[0].endswith(".py"):
        return [sys.executable] + args
    return args


def main(argv: Sequence[str]) -> None:
    command = command_of(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp(command[0], command)  # the same process: dlx-launch's signals reach the trainer
    except OSError as e:
        raise dlx.ConfigError(f"determined.launch.torch_distributed: cannot run {command[0]}: {e.strerror}") from e


if __name__ == "__main__":
    main(sys.argv[1:])
