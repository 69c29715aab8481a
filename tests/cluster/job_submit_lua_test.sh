#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The slurmctld-side fallback: with array_via=job_submit the plugin leaves the array to
# site-config/job_submit.lua, which must produce the same array and throttle.
source "$(dirname "$0")/lib.sh"

conf=$CLUSTER/etc/slurm-jobsubmit.conf
log=$CLUSTER/log/slurmctld.log
# The job is named after the experiment's directory (logreg-grid, logreg-grid.2, ...).
made_by_lua() { grep -cE "dlx: job_submit: uid $(id -u "$DLX_TEST_USER") job 'logreg-grid(\.[0-9]+)?': job array 0-3%2" "$log" || true; }
before=$(made_by_lua)
[ -f "$conf" ] || fail "the cluster has no $conf"
submitted=$(SLURM_CONF=$conf as_user sbatch --parsable --hold --dl-experiment=examples/grid.yaml examples/job.sh)
job=$(job_id_of "$submitted")
expect_contains "squeue (array set by job_submit.lua)" "$(squeue -h -j "$job" -o %i)" "${job}_[0-3%2]"
[ "$(made_by_lua)" -gt "$before" ] || fail "slurmctld.log does not show job_submit.lua setting the array"
scancel "$job"
note "job_submit.lua made the array"
