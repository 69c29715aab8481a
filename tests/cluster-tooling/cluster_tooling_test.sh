#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cluster-level test of `dlx-cluster` (tools/cluster/dlx-cluster): brings a real single-host Slurm
# cluster up in a temporary state dir on its own ports, runs jobs across nodes (srun, sbatch --wait,
# MPI over PMIx), checks partition-priority preemption requeues a `low` job, checks that a daemon
# that cannot start is reported with its log line, and that `down` leaves none of its pids alive.
#
#   cluster_tooling_test.sh [PATH/TO/dlx-cluster] [--port-base N] [--keep]
#   (ports N .. N+3; default DLX_TEST_PORT_BASE + 10, else 17100)
#
# Needs root (slurmd). Exits 77 (ctest SKIP) when not root or when Slurm/munge are not installed.
# srun runs with --quiet (a "queued and waiting for resources" note while nodes still complete
# the previous job is not a failure), and two-node checks accept any two distinct nodes.
# shellcheck disable=SC2016  # single-quoted $VARS are meant for the job shells
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tool="$here/../../tools/cluster/dlx-cluster"
# Ports: --port-base, else DLX_TEST_PORT_BASE + 10 (beside the ctest cluster's base .. base+3, so
# two checkouts' test runs with their own DLX_TEST_PORT_BASE do not collide), else 17100.
port_base=17100 keep=no
if [ -n "${DLX_TEST_PORT_BASE:-}" ]; then port_base=$((DLX_TEST_PORT_BASE + 10)); fi
while [ $# -gt 0 ]; do
  case "$1" in
    --port-base) port_base="$2"; shift 2 ;;
    --keep) keep=yes; shift ;;
    *) tool="$1"; shift ;;
  esac
done
tool="$(readlink -f "$tool")"

if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root to run slurmd"; exit 77; fi
for p in slurmctld slurmd munged srun mpicc; do
  command -v "$p" >/dev/null || { echo "SKIP: $p not installed (scripts/install-deps.sh)"; exit 77; }
done

work="$(mktemp -d /tmp/dlx-cluster-test.XXXXXX)"
chmod 0755 "$work"
state="$work/state"
failures=0
t_start=$SECONDS

cleanup() {
  local rc=$?
  "$tool" down --state-dir "$state" >/dev/null 2>&1 || true
  [ -z "${holder_pid:-}" ] || kill "$holder_pid" 2>/dev/null || true
  if [ "$keep" == no ] && [ "$failures" -eq 0 ] && [ "$rc" -eq 0 ]; then rm -rf "$work"; else echo "# kept $work"; fi
}
trap cleanup EXIT
# Every job command is bounded here, well inside ctest's 300 s: ctest ends a test that runs over
# with SIGKILL, which no trap sees, and that would leave this cluster's daemons running. A step
# that hangs (it happened once, an srun --mpi=pmix on a loaded VM) fails its check instead.
bounded() { timeout --kill-after=10 90 "$@"; }

ok() { echo "ok   $*"; }
fail() { echo "FAIL $1"; echo "     expected: $2"; echo "     seen:     $3"; failures=$((failures + 1)); }
# check DESC EXPECTED SEEN-COMMAND...: pass when the command succeeds
check() {
  local desc="$1" expected="$2"; shift 2
  local out
  if out="$("$@" 2>&1)"; then ok "$desc"; else fail "$desc" "$expected" "${out:-exit $?}"; fi
}
# check_eq DESC EXPECTED SEEN: pass when the two strings are equal
check_eq() {
  if [ "$2" == "$3" ]; then ok "$1"; else fail "$1" "${2:-(nothing)}" "${3:-(nothing)}"; fi
}
# poll SECS COMMAND...: retry until the command succeeds or SECS pass
poll() {
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do [ "$SECONDS" -lt "$deadline" ] || return 1; sleep 0.5; done
}
up() { "$tool" up --state-dir "$state" --port-base "$port_base" "$@"; }
pids_of_state() { cat "$state"/run/*.pid 2>/dev/null | tr -dc '0-9\n' || true; }

echo "# dlx-cluster: $tool"
echo "# state dir: $state, ports $port_base..$((port_base + 3))"

# --- argument checking
out="$("$tool" up --state-dir "$state" --nodes 2 2>&1)" && rc=0 || rc=$?
if [ "$rc" -ne 0 ] && [[ "$out" == *"--nodes must be an integer >= 3"* ]]; then ok "--nodes 2 is refused"
else fail "--nodes 2 is refused" "exit != 0 and '--nodes must be an integer >= 3'" "exit $rc: $out"; fi
refused_up() {  # refused_up WHAT EXPECTED ARGS...: `up` exits non-zero saying EXPECTED, and starts nothing
  local what="$1" expected="$2"; shift 2
  out="$("$tool" up --state-dir "$state" "$@" 2>&1)" && rc=0 || rc=$?
  if [ "$rc" -ne 0 ] && [[ "$out" == *"$expected"* ]] && [ -z "$(pids_of_state)" ]; then ok "$what"
  else fail "$what" "exit != 0 and '$expected'" "exit $rc: $out"; fi
}
refused_up "--shards-per-gpu without --gpus is refused" "--shards-per-gpu 4 needs GPUs to share: add --gpus N" \
  --shards-per-gpu 4
refused_up "--gpus x is refused" "--gpus: x: not a number of GPUs (0 to 64)" --gpus x
refused_up "--first-job-id 0 is refused" "--first-job-id: 0: not a job id (1 to 60000000, below Slurm's MaxJobId)" \
  --first-job-id 0
missing=0
while [ -c "/dev/nvidia$missing" ]; do missing=$((missing + 1)); done  # the first GPU this host lacks
refused_up "--gpus without the GPUs' devices is refused" \
  "--gpus 64: /dev/nvidia$missing is not a GPU's device here (use --placeholder-gpus for a cluster without GPUs)" --gpus 64

# --- up without a plugin, twice (idempotent)
t0=$SECONDS
out="$(DLX_PLUGIN="$work/missing/dlx_spank.so" up --first-job-id 7000 2>&1)" && rc=0 || rc=$?
echo "# first up took $((SECONDS - t0))s"
if [ "$rc" -eq 0 ]; then ok "up starts the cluster"; else fail "up starts the cluster" "exit 0" "exit $rc: $out"; exit 1; fi
if [[ "$out" == *"warning: dlx SPANK plugin not found"* ]]; then ok "up warns about the missing plugin"
else fail "up warns about the missing plugin" "a 'plugin not found' warning" "$out"; fi
if ! grep -q '^required' "$state/etc/plugstack.conf" && [ -f "$state/etc/plugstack-jobsubmit.conf" ]; then
  ok "plugstack.conf written without a plugin line"
else fail "plugstack.conf written without a plugin line" "no 'required' line" "$(cat "$state/etc/plugstack.conf" 2>&1)"; fi
out="$(up 2>&1)" && rc=0 || rc=$?
if [ "$rc" -eq 0 ] && [[ "$out" == *"already running"* ]]; then ok "second up says already running"
else fail "second up says already running" "exit 0, 'already running'" "exit $rc: $out"; fi

eval "$("$tool" env --state-dir "$state" --bin-dir "$work/bin")"
check_eq "env sets SLURM_CONF" "$state/etc/slurm.conf" "$SLURM_CONF"
check_eq "env puts the bin dir first on PATH" "$work/bin" "${PATH%%:*}"
check_eq "env sets OMPI_MCA_btl_tcp_if_include=lo" "lo" "${OMPI_MCA_btl_tcp_if_include:-}"

idle="$(sinfo -h -N -p low -o '%N %t' 2>&1 || true)"
if [ "$(echo "$idle" | grep -c ' idle$')" -eq 3 ]; then ok "3 nodes idle"
else fail "3 nodes idle" "n1 n2 n3 idle" "$idle"; fi

# --- jobs across nodes
out="$(bounded srun --quiet -N3 --ntasks-per-node=1 bash -c 'echo $SLURMD_NODENAME' 2>&1 | sort | paste -sd ' ')"
check_eq "srun -N3 runs one task on each node" "n1 n2 n3" "$out"
for conf in slurm.conf slurm-jobsubmit.conf; do
  out="$(SLURM_CONF="$state/etc/$conf" bounded srun --quiet -N2 bash -c 'echo $SLURMD_NODENAME' 2>&1 | sort | paste -sd ' ')"
  if [[ "$out" =~ ^(n[1-3])\ (n[1-3])$ ]] && [ "${BASH_REMATCH[1]}" != "${BASH_REMATCH[2]}" ]; then
    ok "srun -N2 works with SLURM_CONF=$conf"
  else fail "srun -N2 works with SLURM_CONF=$conf" "two distinct nodes, e.g. 'n1 n2'" "$out"; fi
done
out="$(bounded runuser -u nobody -- env SLURM_CONF="$SLURM_CONF" srun --quiet -N1 -D /tmp id -un 2>&1 || true)"
check_eq "an unprivileged user can run jobs" "nobody" "$out"
out="$(bounded sbatch --wait -p low -N2 -o "$work/batch.out" --wrap 'srun hostname >/dev/null; echo done-$SLURM_JOB_NUM_NODES' 2>&1)" && rc=0 || rc=$?
if [ "$rc" -eq 0 ] && grep -qx done-2 "$work/batch.out"; then ok "sbatch --wait in partition low"
else fail "sbatch --wait in partition low" "exit 0 and 'done-2' in the output" \
  "exit $rc: $out; output: $(cat "$work/batch.out" 2>&1)"; fi

# --- MPI over PMIx across two nodes
cat >"$work/mpi_ranks.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  int rank, size, one, sum = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  one = rank + 1;
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  printf("rank %d/%d on %s sum %d\n", rank, size, getenv("SLURMD_NODENAME"), sum);
  MPI_Finalize();
  return 0;
}
EOF
mpicc -o "$work/mpi_ranks" "$work/mpi_ranks.c"
out="$(bounded srun --quiet --mpi=pmix -N2 -n2 -D "$work" "$work/mpi_ranks" 2>&1 | sort | paste -sd ';' || true)"
if [[ "$out" =~ ^rank\ 0/2\ on\ (n[1-3])\ sum\ 3\;rank\ 1/2\ on\ (n[1-3])\ sum\ 3$ ]] \
   && [ "${BASH_REMATCH[1]}" != "${BASH_REMATCH[2]}" ]; then
  ok "srun --mpi=pmix -N2 -n2 runs ranks on two nodes ($out)"
else fail "srun --mpi=pmix -N2 -n2 runs ranks on two nodes" \
  "rank 0/2 on nA sum 3;rank 1/2 on nB sum 3 with A != B" "$out"; fi

# --- job_submit.lua (slurm-jobsubmit.conf) turns a submission into an array. A stand-in for
# dlx_spank.so sets DLX_ARRAY_SPEC in sbatch exactly as the real plugin does (spank contract).
if [ -f /usr/include/slurm/spank.h ] && command -v gcc >/dev/null; then
  cat >"$work/dlx_standin.c" <<'EOF'
#include <stdlib.h>
#include <slurm/spank.h>
SPANK_PLUGIN(dlx_standin, 1);
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av) {
  const char *spec = getenv("STANDIN_ARRAY_SPEC");
  (void)ac; (void)av;
  if (spank_context() == S_CTX_ALLOCATOR && spec && *spec)
    return spank_job_control_setenv(sp, "DLX_ARRAY_SPEC", spec, 1);
  return 0;
}
EOF
  gcc -shared -fPIC -o "$work/dlx_standin.so" "$work/dlx_standin.c"
  out="$(up --plugin "$work/dlx_standin.so" 2>&1)" && rc=0 || rc=$?
  line="$(grep '^required' "$state/etc/plugstack-jobsubmit.conf" || true)"
  if [ "$rc" -eq 0 ] && [[ "$out" == *"already running"* ]] \
     && [ "$line" == "required $work/dlx_standin.so storage_root=$state/storage local_dir=$state/tmp/%n array_via=job_submit" ]; then
    ok "up --plugin while running rewrites the plugstack files"
  else
    fail "up --plugin while running rewrites the plugstack files" \
      "exit 0, 'already running', 'required <plugin> storage_root=<state>/storage local_dir=<state>/tmp/%n array_via=job_submit'" \
      "exit $rc: $out; plugstack-jobsubmit.conf: $line"
  fi
  # array_of SPEC [sbatch args...]: the array fields of a held job submitted through the Lua path
  array_of() {
    local id; id="$(STANDIN_ARRAY_SPEC="$1" SLURM_CONF="$state/etc/slurm-jobsubmit.conf" \
      sbatch --parsable -H -o /dev/null "${@:2}" --wrap true)"
    scontrol show job "$id" | grep -o -E 'ArrayTaskId=[^ ]+|ArrayTaskThrottle=[0-9]+' \
      | sort -u | paste -sd ' ' || true
    scancel "$id"
  }
  out="$(array_of 0-3%2 2>&1)"
  check_eq "job_submit.lua makes a DLX_ARRAY_SPEC=0-3%2 job an array" \
    "ArrayTaskId=0-3%2 ArrayTaskThrottle=2" "$out"
  out="$(array_of 0-3%2 --array=1,5 2>&1)"
  check_eq "job_submit.lua keeps an explicit --array" "ArrayTaskId=1,5" "$out"
  out="$(array_of "" 2>&1)"
  check_eq "job_submit.lua leaves jobs without DLX_ARRAY_SPEC alone" "" "$out"
  check "slurmctld logged the Lua decision" "'job array 0-3%2' in slurmctld.log" \
    grep -q "lua: dlx: job_submit: uid 0 job 'wrap': job array 0-3%2" "$state/log/slurmctld.log"
else
  echo "# skipped the job_submit.lua checks: no gcc or slurm/spank.h (slurm-wlm-plugins-dev)"
fi

# --- a daemon whose pid file points at a dead process is restarted by up; non-root is refused
pid3="$(cat "$state/run/slurmd-n3.pid")"
kill "$pid3"
poll 10 test ! -d "/proc/$pid3" || true
echo "$pid3" >"$state/run/slurmd-n3.pid"
out="$(up 2>&1)" && rc=0 || rc=$?
if [ "$rc" -eq 0 ] && [[ "$out" == *"(started: slurmd-n3)"* ]]; then ok "up restarts only the dead slurmd"
else fail "up restarts only the dead slurmd" "exit 0, '(started: slurmd-n3)'" "exit $rc: $out"; fi
out="$(runuser -u nobody -- "$tool" up --state-dir "$state" 2>&1)" && rc=0 || rc=$?
if [ "$rc" -ne 0 ] && [[ "$out" == *"up must run as root"* ]]; then ok "up refuses an ordinary user"
else fail "up refuses an ordinary user" "exit != 0, 'up must run as root'" "exit $rc: $out"; fi

# --- preemption: a `high` job requeues the `low` job that fills the cluster
low="$(sbatch --parsable -p low -N3 --exclusive -o /dev/null --wrap 'sleep 300')"
# Every job of this cluster came after --first-job-id (batch.out's, the arrays' and this one).
if [ "${low%%;*}" -gt 7000 ]; then ok "job ids start at --first-job-id 7000 (this one: $low)"
else fail "job ids start at --first-job-id 7000" "a job id past 7000" "$low"; fi
if poll 30 bash -c "squeue -h -j $low -o %T | grep -qx RUNNING"; then
  high="$(sbatch --parsable -p high -N1 -o /dev/null --wrap 'sleep 2')"
  t0=$SECONDS
  if poll 60 bash -c "scontrol show job $low | grep -q 'Restarts=1'"; then
    ok "high job $high requeues low job $low ($((SECONDS - t0))s)"
    # COMPLETING first, while its processes are killed (KillWait): it must then be pending again.
    job_state() { scontrol show job "$low" | grep -o -E 'JobState=[A-Z_]+|Reason=[^ ]+' | paste -sd ' '; }
    poll 30 bash -c "! scontrol show job $low | grep -q JobState=COMPLETING" || true
    st="$(job_state)"
    if [[ "$st" == *PENDING* || "$st" == *REQUEUED* || "$st" == *RUNNING* ]]; then ok "requeued job is $st"
    else fail "requeued job state" "PENDING/REQUEUED (or RUNNING again)" "$st"; fi
  else
    fail "high job requeues low job" "Restarts=1 on job $low within 60s" "$(scontrol show job "$low" | grep -E 'JobState|Restarts')"
  fi
else
  fail "low job starts" "job $low RUNNING within 30s" "$(squeue -h -j "$low" -o '%T %r' 2>&1)"
fi
scancel "$low" ${high:+"$high"} 2>/dev/null || true

# --- down stops exactly its daemons
pids="$(pids_of_state)"
t0=$SECONDS
out="$("$tool" down --state-dir "$state" 2>&1)" && rc=0 || rc=$?
echo "# down took $((SECONDS - t0))s"
alive=""
for p in $pids; do [ -d "/proc/$p" ] && alive+=" $p"; done
if [ "$rc" -eq 0 ] && [ -z "$alive" ] && [ "$(echo "$pids" | wc -w)" -eq 5 ]; then ok "down stops all 5 daemons"
else fail "down stops all 5 daemons" "exit 0, pids [${pids//$'\n'/ }] gone" "exit $rc, still alive:${alive:- none}; $out"; fi
out="$("$tool" down --state-dir "$state" 2>&1)" && rc=0 || rc=$?
if [ "$rc" -eq 0 ] && [[ "$out" == *"not running"* ]]; then ok "second down is a no-op"
else fail "second down is a no-op" "exit 0, 'not running'" "exit $rc: $out"; fi

# --- a daemon that cannot start is reported with its log line
python3 -c 'import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); time.sleep(600)' $((port_base + 2)) &
holder_pid=$!
sleep 0.5
out="$(up --timeout 15 2>&1)" && rc=0 || rc=$?
if [ "$rc" -ne 0 ] && [[ "$out" == *"slurmd n2 failed to start: "*[a-zA-Z]* ]]; then ok "port in use is reported: ${out##*$'\n'}"
else fail "port in use is reported" "exit != 0 and 'slurmd n2 failed to start: <log line>'" "exit $rc: $out"; fi
kill "$holder_pid"; wait "$holder_pid" 2>/dev/null || true; holder_pid=""
pids="$(pids_of_state)"
"$tool" down --state-dir "$state" >/dev/null 2>&1 || true
alive=""
for p in $pids; do [ -d "/proc/$p" ] && alive+=" $p"; done
check_eq "down after a failed up stops the rest (pids alive of [${pids//$'\n'/ }])" "" "$alive"

echo "# $failures failure(s) in $((SECONDS - t_start))s"
[ "$failures" -eq 0 ]
