#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The job script for every dlx example: one srun step running dlx-launch on each task of the
# trial. dlx-launch checks the step against the experiment's resources, sets RANK, WORLD_SIZE,
# LOCAL_RANK, MASTER_ADDR... and runs the experiment's entrypoint (dlx-example-logreg, found on
# PATH). Nodes, tasks and the array come from the experiment file; output options are yours.
#   sbatch --dl-experiment=examples/grid.yaml examples/job.sh
srun --mpi=pmix dlx-launch
