#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job, from a fresh clone: install what is needed, build, start the local Slurm cluster,
# submit the example grid experiment with real sbatch, wait for it, print the result table.
# Run as root (the local cluster's slurmd must be able to start jobs as any user).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# Only what the demo runs: the dlx command, dlx-launch, the SPANK plugin and the example trainer
# (with the libraries they link), and libdlx_c, which the Python SDK loads (the PyTorch examples
# the quickstart goes on to run need it); not the tests and benchmarks (`bash scripts/build.sh`
# builds all).
bash scripts/build.sh dlx dlx-launch dlx_spank dlx-example-logreg dlx_c

state=${DLX_CLUSTER_DIR:-/var/lib/dlx-cluster}
build/bin/dlx cluster up --state-dir "$state"
eval "$(build/bin/dlx cluster env --state-dir "$state")"

mkdir -p demo-output
job=$(sbatch --parsable --dl-experiment=examples/grid.yaml --output=demo-output/grid-%A_%a.out examples/job.sh)
job=${job%%;*}
echo "# submitted job $job; squeue:"
squeue -j "$job"
for _ in $(seq 600); do
  [ -z "$(squeue -h -j "$job" -o %i)" ] && break
  sleep 1
done
dlx status "$job"
echo "# logs: demo-output/; stop the cluster with: build/bin/dlx cluster down --state-dir $state"
