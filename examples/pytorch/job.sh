#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The job script of the PyTorch examples: every task runs the experiment's entrypoint under
# dlx-launch, which sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT for
# torch.distributed and puts the dlx Python package on the path. No --mpi=pmix: a PyTorch trainer
# communicates through torch.distributed, not MPI (examples/job.sh, for trainers that use
# libdlx's MPI communicator, has it).
#   sbatch --dl-experiment=examples/pytorch/mnist.yaml examples/pytorch/job.sh
srun dlx-launch
