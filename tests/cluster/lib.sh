# SPDX-License-Identifier: Apache-2.0
# Shared helpers for the cluster tests: they run real sbatch/srun/squeue against the local cluster
# that setup.sh started (state in $DLX_TEST_STATE), mostly as the unprivileged user $DLX_TEST_USER.
set -euo pipefail

: "${DLX_TEST_STATE:?DLX_TEST_STATE must name the state directory of the test cluster}"
DLX_TEST_USER=${DLX_TEST_USER:-dlxtest}
PREFIX=$DLX_TEST_STATE/prefix
CLUSTER=$DLX_TEST_STATE/cluster
WORK=$DLX_TEST_STATE/work          # the test user's submit directory (world-traversable)
SOURCE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

fail() { echo "FAIL: $*" >&2; exit 1; }
trap 'echo "FAIL: $(basename "$0"):$LINENO: command failed: $BASH_COMMAND" >&2' ERR

# Number of entries in directory $1 (0 when it does not exist).
count_entries() { if [ -d "$1" ]; then find "$1" -mindepth 1 -maxdepth 1 | wc -l; else echo 0; fi; }
note() { echo "# $*"; }

# The client environment of the test cluster (SLURM_CONF, PATH, ...).
cluster_env() { "$PREFIX/bin/dlx" cluster env --state-dir "$CLUSTER"; }
eval "$(cluster_env)"

# Run a command as the unprivileged test user, in $WORK, with the cluster's client environment.
as_user() {
  runuser -u "$DLX_TEST_USER" -- env -i HOME="$WORK" USER="$DLX_TEST_USER" LOGNAME="$DLX_TEST_USER" \
    PATH="$PREFIX/bin:/usr/bin:/bin" SLURM_CONF="$SLURM_CONF" \
    OMPI_MCA_btl_tcp_if_include=lo bash -c 'cd "$0" && "$@"' "$WORK" "$@"
}

storage_root() { echo "$CLUSTER/storage"; }
user_storage() { echo "$(storage_root)/$DLX_TEST_USER"; }

# Wait until no task of job $1 is pending or running (bounded: $2 seconds, default 240). Polls
# every 0.25 s for 10 s, so that a test goes on as soon as a short job is gone, then every 0.5 s:
# a squeue costs ~25 ms of CPU (its start and slurmctld's answer), and the two chains wait on jobs
# for most of their half hour beside the unit tests on CI's two cores.
wait_for_job() {
  local job=$1 limit=${2:-240}
  local start=$SECONDS deadline=$((SECONDS + limit))
  while [ -n "$(squeue -h -j "$job" -o %i 2>/dev/null)" ]; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      squeue -j "$job" >&2 || true
      fail "job $job still queued after ${limit}s"
    fi
    if [ $((SECONDS - start)) -lt 10 ]; then sleep 0.25; else sleep 0.5; fi
  done
}

# The job id printed by `sbatch --parsable` (which may append ";cluster").
job_id_of() { echo "${1%%;*}"; }

expect_contains() {  # expect_contains "what" "$haystack" "needle"
  case "$2" in
    *"$3"*) ;;
    *) fail "$1: expected to find [$3] in:
$2" ;;
  esac
}
