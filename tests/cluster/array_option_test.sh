#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A user's explicit --array that names existing trials is respected, never overridden; the
# experiment's resources yield to the user's own -N; jobs without --dl-experiment are untouched.
source "$(dirname "$0")/lib.sh"

submitted=$(as_user sbatch --parsable --hold --array=1,3 --dl-experiment=examples/grid.yaml examples/job.sh)
job=$(job_id_of "$submitted")
expect_contains "squeue with the user's --array" "$(squeue -h -j "$job" -o %i)" "${job}_[1,3]"
expect_contains "nodes from the experiment" "$(squeue -h -j "$job" -o %D | head -1)" "2"
scancel "$job"

submitted=$(as_user sbatch --parsable --hold -N 1 --dl-experiment=examples/grid.yaml examples/job.sh)
job=$(job_id_of "$submitted")
[ "$(squeue -h -j "$job" -o %D | head -1 | tr -d ' ')" = 1 ] || fail "the user's -N 1 was overridden"
scancel "$job"

# Without --dl-experiment the plugin does nothing: no array, no DLX_ variables.
submitted=$(as_user sbatch --parsable --wait --output=plain.out --wrap 'env | sort')
grep -q '^SLURM_JOB_ID=' "$WORK/plain.out" || fail "the plain job did not run: $(cat "$WORK/plain.out")"
if grep -E '^(DLX_|SLURM_ARRAY_)' "$WORK/plain.out"; then fail "a plain job got dlx or array variables"; fi
note "explicit --array respected, -N respected, plain jobs untouched"
