#!/bin/bash
# The job script of the PyTorch example: dlx.py (installed next to libdlx_c.so, in
# <prefix>/lib/dlx/python) goes on PYTHONPATH, then every task runs the script under dlx-launch,
# which sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT for torch.distributed.
#   sbatch --dl-experiment=examples/pytorch/ddp.yaml examples/pytorch/job.sh
prefix=$(dirname "$(dirname "$(command -v dlx-launch)")")
export PYTHONPATH="$prefix/lib/dlx/python${PYTHONPATH:+:$PYTHONPATH}"
srun dlx-launch -- /usr/bin/python3 examples/pytorch/ddp.py
