#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Soak test of preemption, requeue and resume (docs/fault-tolerance.md): runs one whole ASHA
# experiment (scripts/soak/asha-soak.yaml: 8 trials through one slot, pauses and promotions) on a
# local Slurm cluster, once undisturbed, then again ("rounds", as many as the budget allows, at
# least one) while a seeded chaos loop preempts its running array task, `scontrol requeue`s it
# and SIGKILLs trainer ranks (scripts/soak/chaos.sh). Each round is checked against the
# undisturbed run (scripts/soak/check.py); the exit status is the verdict (0 pass, 1 fail,
# 2 usage or set-up error):
#   - every trial completed, stopped or paused (ASHA), or failed with a recorded reason; none
#     left running; the same end state as undisturbed;
#   - `dlx ckpt verify` passes on every checkpoint of every run;
#   - every trial's metrics (trial.h5) equal the undisturbed run's, bit for bit: none lost or
#     duplicated;
#   - every trial's newest checkpoint is at the same step with byte-identical tensors;
#   - `dlx replay` is clean for every run and its decisions are equal to the undisturbed run's
#     (ignoring journal offsets and times; see check.py).
# Not part of CI: it takes minutes. Run as root (it starts the cluster and SIGKILLs trainers).
#
#   scripts/soak.sh [--minutes N] [--seed S] [--build-dir DIR] [--port-base N] [--keep]
#   scripts/soak.sh --state-dir DIR [--minutes N] [--seed S]
#
# --minutes N    the budget (default 10; at least 4). A new round starts while 1.5 times the
#                undisturbed run's time + 60 s is left; chaos stops when 1.25 times it + 30 s is
#                left; a round still queued at N + 3 minutes is cancelled and the soak fails. A
#                budget that leaves the first round under half an undisturbed run of chaos ends
#                with exit 2 after the undisturbed run, naming the --minutes needed (~3 runs).
# --seed S       seeds the chaos loop: which event, when, which rank (default 1).
# --state-dir    use an already running cluster laid out by tests/cluster/setup.sh (prefix/,
#                cluster/, work/; e.g. a ctest state dir with its cluster up). Without it the soak
#                installs --build-dir (default build/) into /tmp/dlx-soak.XXXXXXXX, brings a cluster
#                up there on --port-base (default $DLX_TEST_PORT_BASE, else 17000: it uses the
#                base and the 3 ports after it), and tears it down at the end (unless --keep).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
minutes=10 seed=1 state_dir="" build_dir=$repo/build port_base=${DLX_TEST_PORT_BASE:-17000} keep=0
usage() { sed -n '19,32p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "soak: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) [ $# -ge 2 ] || die "--minutes needs a value"; minutes=$2; shift 2 ;;
    --seed) [ $# -ge 2 ] || die "--seed needs a value"; seed=$2; shift 2 ;;
    --state-dir) [ $# -ge 2 ] || die "--state-dir needs a value"; state_dir=$2; shift 2 ;;
    --build-dir) [ $# -ge 2 ] || die "--build-dir needs a value"; build_dir=$2; shift 2 ;;
    --port-base) [ $# -ge 2 ] || die "--port-base needs a value"; port_base=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
done
[[ "$minutes" =~ ^[0-9]+$ && "$minutes" -ge 4 ]] || die "--minutes: $minutes: need a whole number >= 4"
[[ "$seed" =~ ^[0-9]+$ ]] || die "--seed: $seed: need a non-negative integer"
[ "$(id -u)" = 0 ] || die "run as root: the soak starts the cluster's daemons and SIGKILLs trainers"

started_cluster=0
if [ -z "$state_dir" ]; then
  [ -x "$build_dir/bin/dlx" ] || die "--build-dir $build_dir: no bin/dlx (build first: scripts/build.sh)"
  source "$repo/scripts/private_dir.sh"
  state_dir=$(private_dir /tmp dlx-soak) || die "no private state directory in /tmp"
  echo "# soak: installing $build_dir and starting a cluster in $state_dir (ports $port_base-$((port_base + 3)))"
  DLX_TEST_STATE=$state_dir DLX_TEST_PORT_BASE=$port_base bash "$repo/tests/cluster/setup.sh" "$build_dir" ||
    die "could not bring the cluster up (see $state_dir/cluster/log)"
  started_cluster=1
fi
[ -x "$state_dir/prefix/bin/dlx" ] && [ -d "$state_dir/cluster" ] && [ -d "$state_dir/work" ] ||
  die "--state-dir $state_dir: not laid out by tests/cluster/setup.sh (prefix/, cluster/, work/)"
export DLX_TEST_STATE=$state_dir
# shellcheck source=../tests/cluster/lib.sh
source "$repo/tests/cluster/lib.sh"
source "$repo/scripts/soak/chaos.sh"
trap - ERR
keep_files=$keep
finish() {  # a cluster the soak started is stopped (unless --keep); its files go unless kept
  [ "$started_cluster" = 1 ] && [ "$keep" = 0 ] || return 0
  "$PREFIX/bin/dlx" cluster down --state-dir "$CLUSTER" > /dev/null 2>&1 || true
  [ "$keep_files" = 1 ] || rm -rf "$state_dir"
}
trap finish EXIT

soak_start=$SECONDS
out=$WORK/soak-$seed-$$
mkdir -p "$out"
cp "$repo/scripts/soak/asha-soak.yaml" "$repo/scripts/soak/job.sh" "$out/"
chown -R "$DLX_TEST_USER" "$out"
chmod -R a+rX "$out"
chaos_log=$out/chaos.log
rel=${out#"$WORK"/}
echo "# soak: seed $seed, budget $minutes min, output in $out"

# submit_experiment LABEL: submits the experiment; prints the array job id.
submit_experiment() {
  local label=$1 submitted
  submitted=$(as_user sbatch --parsable --open-mode=append --output="$rel/$label-%A_%a.out" \
    --dl-experiment="$rel/asha-soak.yaml" "$rel/job.sh" 2> "$out/$label.sbatch.err") ||
    { echo "soak: sbatch failed: $(cat "$out/$label.sbatch.err")" >&2; exit 2; }
  job_id_of "$submitted"
}

experiment_dir() { readlink "$(user_storage)/.jobs/$1"; }

# 1. The undisturbed reference run.
t0=$SECONDS
ref_job=$(submit_experiment reference)
echo "# soak: reference run: job $ref_job ($(cat "$out/reference.sbatch.err"))"
limit=$((minutes * 60 / 2))
wait_until_gone() {  # JOB SECONDS: 0 when the job left the queue in time, else cancels it
  local deadline=$((SECONDS + $2))
  while job_in_queue "$1"; do
    if [ "$SECONDS" -ge "$deadline" ]; then scancel "$1" || true; return 1; fi
    sleep 1
  done
}
wait_until_gone "$ref_job" "$limit" ||
  { echo "soak: the undisturbed run did not finish within ${limit} s (half the budget): raise --minutes" >&2; exit 2; }
ref_seconds=$((SECONDS - t0))
ref_dir=$(experiment_dir "$ref_job")
echo "# soak: reference run done in ${ref_seconds} s: $ref_dir"

# replay_of LABEL DIR: `dlx replay --json` into $out/LABEL.replay.json (text and status beside it).
replay_of() {
  as_user dlx replay "$2" > "$out/$1.replay.txt" 2>&1 || true
  as_user dlx status "$2" > "$out/$1.status.txt" 2>&1 || true
  as_user dlx replay --json "$2" > "$out/$1.replay.json" 2> "$out/$1.replay.err" && return 0
  echo "# check replay     FAIL  dlx replay $2 ($1): $(cat "$out/$1.replay.err")"
  return 1
}
verdict=0
replay_of reference "$ref_dir" || verdict=1
budget_end=$((soak_start + minutes * 60))
# The first round needs room for chaos: at least half an undisturbed run (and 30 s) of it.
window=$(( ref_seconds / 2 > 30 ? ref_seconds / 2 : 30 ))
if [ $((budget_end - ref_seconds * 5 / 4 - 30 - SECONDS)) -lt "$window" ]; then
  need=$(( (SECONDS - soak_start + ref_seconds * 5 / 4 + 30 + window + 59) / 60 ))
  echo "soak: --minutes $minutes leaves no room for chaos: the undisturbed run took ${ref_seconds} s; use --minutes $need or more" >&2
  exit 2
fi

# 2. Disturbed runs ("rounds"), one after another while the budget allows another (1.5 times the
# undisturbed run + 60 s left): in each, events until 1.25 times the undisturbed run + 30 s are
# left, then the run finishes undisturbed; cancelled (and failed) past the budget + 3 minutes.
# Each round is checked against the reference.
RANDOM=$seed
gap_min=5 gap_max=20
declare -A events_by_kind=()
event_count=0
round=0
while [ "$round" = 0 ] || [ $((budget_end - SECONDS)) -ge $((ref_seconds * 3 / 2 + 60)) ]; do
  round=$((round + 1))
  label=chaos$round
  round_events=$event_count
  chaos_job=$(submit_experiment "$label")
  chaos_t0_ms=$(($(date +%s%N) / 1000000))
  echo "# soak: round $round: job $chaos_job"
  for _ in $(seq 240); do [ -L "$(user_storage)/.jobs/$chaos_job" ] && break; sleep 0.5; done
  [ -L "$(user_storage)/.jobs/$chaos_job" ] || { echo "soak: job $chaos_job made no experiment directory" >&2; exit 2; }
  chaos_dir=$(experiment_dir "$chaos_job")
  finished=0
  chaos_loop "$chaos_job" "$chaos_dir" $((budget_end - ref_seconds * 5 / 4 - 30)) $((budget_end + 180)) && finished=1
  chaos_seconds=$(( ($(date +%s%N) / 1000000 - chaos_t0_ms) / 1000 ))
  echo "# soak: round $round ended after ${chaos_seconds} s with $((event_count - round_events)) events: $chaos_dir"

  # 3. The checks of this round.
  if [ "$finished" != 1 ]; then
    echo "# check finished   FAIL  round $round was still queued $((minutes + 3)) min after the start (cancelled)"
    verdict=1
  fi
  mapfile -t checkpoints < <(find "$chaos_dir/trials" -name 'step-*.h5' | sort)
  if verify=$("$PREFIX/bin/dlx" ckpt verify "${checkpoints[@]}" 2>&1); then
    echo "# check checkpoints PASS  dlx ckpt verify: $(echo "$verify" | tail -1 | sed 's/^# //')"
  else
    echo "# check checkpoints FAIL  dlx ckpt verify:"; echo "$verify" | grep -A1 FAILED; verdict=1
  fi
  if replay_of "$label" "$chaos_dir"; then
    /usr/bin/python3 "$repo/scripts/soak/check.py" "$ref_dir" "$chaos_dir" \
      "$out/reference.replay.json" "$out/$label.replay.json" || verdict=1
  else
    verdict=1
  fi
  # Information: error lines of the job output other than the expected ones of a requeue.
  unexpected=$(cat "$out/$label"-*.out | grep -i -E "error|failed" |
    grep -v -E "Exited with exit code 85|DUE TO (JOB REQUEUE|PREEMPTION)" || true)
  [ -z "$unexpected" ] || { echo "# soak: round $round: unexpected lines in the job output:"; echo "$unexpected" | sort | uniq -c | sed 's/^/#   /'; }
done

mapfile -t checkpoints < <(find "$ref_dir/trials" -name 'step-*.h5' | sort)
if verify=$("$PREFIX/bin/dlx" ckpt verify "${checkpoints[@]}" 2>&1); then
  echo "# check checkpoints PASS  dlx ckpt verify (reference): $(echo "$verify" | tail -1 | sed 's/^# //')"
else
  echo "# check checkpoints FAIL  dlx ckpt verify (reference):"; echo "$verify" | grep -A1 FAILED; verdict=1
fi
[ "$event_count" -gt 0 ] || { echo "# check chaos      FAIL  no event was injected (raise --minutes)"; verdict=1; }
kinds=$(for k in "${!events_by_kind[@]}"; do printf '%s %s, ' "${events_by_kind[$k]}" "$k"; done)
summary="seed $seed, $round rounds, $event_count events (${kinds%, }), $((SECONDS - soak_start)) s"
echo "# soak: job output, chaos log and replays in $out"
if [ "$verdict" = 0 ]; then
  echo "# verdict: PASS ($summary)"
else
  echo "# verdict: FAIL ($summary; cluster logs in $CLUSTER/log)"
  if [ "$started_cluster" = 1 ] && [ "$keep" = 0 ]; then
    keep_files=1
    echo "# soak: keeping $state_dir for inspection (the cluster is stopped)"
  fi
fi
exit "$verdict"
