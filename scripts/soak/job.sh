#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The soak's job script: one srun step of dlx-launch per task (TCP between single-host nodes).
export OMPI_MCA_btl=self,tcp
srun --mpi=pmix dlx-launch
