# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2154  # chaos_log, chaos_t0_ms, gap_min, gap_max: set by soak.sh
# The soak's chaos loop (sourced by scripts/soak.sh, after tests/cluster/lib.sh): while an
# experiment's job array runs, disturb its running array task at seeded random times with one of
#   preempt  a job in partition `high` that needs every node (Slurm preempts the `low` task: USR2
#            notice, checkpoint, exit 85, requeue),
#   requeue  `scontrol requeue <job>_<task>` (SIGTERM notice, checkpoint, exit 85, requeue),
#   kill     SIGKILL one trainer rank, chosen by PID (no notice: dlx-launch counts a crash and
#            exits 85 while max_restarts allows; the trial resumes from its last periodic
#            checkpoint).
# Order of results: Slurm starts the next pending array task while a requeued one waits out its
# cred_expire delay, and ASHA's decisions depend on the order in which results arrive. So that
# the disturbed run can be compared decision by decision with the undisturbed one, every event
# first holds the array's other pending tasks (`scontrol hold`) and releases them once the
# disturbed task runs again (or has ended). This keeps the order; it does not change
# what each task goes through.

# soak_log TEXT: a line of the chaos log, with the seconds since the chaos run started.
soak_log() { printf '# chaos %6.1fs  %s\n' "$(($(date +%s%N) / 1000000 - chaos_t0_ms))e-3" "$*" | tee -a "$chaos_log"; }

job_in_queue() { [ -n "$(squeue -h -j "$1" -o %i 2> /dev/null)" ]; }
running_tasks() { squeue -h -r -j "$1" -t R -o %i 2> /dev/null || true; }
pending_tasks() { squeue -h -r -j "$1" -t PD -o %i 2> /dev/null || true; }

# task_field TASK NAME: one field of `scontrol show job` (e.g. Restarts, JobState); empty if gone.
task_field() {
  scontrol -o show job "$1" 2> /dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}

# trainer_pids EXPERIMENT_DIR: the PIDs of dlx-example-logreg processes of that experiment (read
# from /proc/PID/environ, so that trainers of other clusters on this host are never touched).
trainer_pids() {
  local proc pid
  for proc in /proc/[0-9]*; do
    pid=${proc#/proc/}
    [ "$(readlink "$proc/exe" 2> /dev/null)" = "$PREFIX/bin/dlx-example-logreg" ] || continue
    tr '\0' '\n' < "$proc/environ" 2> /dev/null | grep -qx "DLX_EXPERIMENT_DIR=$1" && echo "$pid"
  done
  return 0
}

# random_between LOW HIGH: seeded (RANDOM is seeded once by soak.sh).
random_between() { echo $(($1 + RANDOM % ($2 - $1 + 1))); }

# disturb JOB EXPERIMENT_DIR: one chaos event on the running task, if there is one. Sets
# `event_count`, `events_by_kind[...]`.
disturb() {
  local job=$1 dir=$2 task held restarts now_restarts kind pids pid deadline state ended_polls was_down preemptor=""
  task=$(running_tasks "$job" | head -1)
  [ -n "$task" ] || { soak_log "no running task: nothing to disturb"; return 0; }
  restarts=$(task_field "$task" Restarts)
  case $((RANDOM % 3)) in 0) kind=preempt ;; 1) kind=requeue ;; 2) kind="kill" ;; esac
  pids=$(trainer_pids "$dir")
  if [ "$kind" = kill ] && [ -z "$pids" ]; then kind=requeue; fi  # no trainer yet (start-up)
  held=$(pending_tasks "$job" | paste -sd, -)
  [ -z "$held" ] || scontrol hold "$held" > /dev/null 2>&1 || soak_log "warning: scontrol hold $held failed"
  case $kind in
    preempt) preemptor=$(as_user sbatch --parsable -p high -N 3 --exclusive -o /dev/null --wrap "sleep 2")
             preemptor=${preemptor%%;*}
             soak_log "preempt  $task (restarts $restarts): job $preemptor in high on every node" ;;
    requeue) if scontrol requeue "$task" 2> /dev/null; then soak_log "requeue  $task (restarts $restarts)"
             else soak_log "requeue  $task: refused (the task was ending)"; fi ;;
    kill)    pid=$(echo "$pids" | sed -n "$((RANDOM % $(echo "$pids" | wc -l) + 1))p")
             kill -KILL "$pid" 2> /dev/null || true
             soak_log "kill     $task (restarts $restarts): SIGKILL trainer pid $pid (of $(echo $pids))" ;;
  esac
  event_count=$((event_count + 1))
  events_by_kind[$kind]=$((${events_by_kind[$kind]:-0} + 1))
  # Until the task runs again after a requeue: seen out of RUNNING (a requeued task waits at least
  # cred_expire + 1 s), then RUNNING with a higher restart count (a preempted task still shows
  # RUNNING, with its count already raised, during the grace time), or until it has ended (a
  # final state for 2 s: the task was ending anyway).
  deadline=$((SECONDS + 180)) ended_polls=0 was_down=0
  while :; do
    state=$(task_field "$task" JobState)
    case $state in
      ""|COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE) ended_polls=$((ended_polls + 1)) ;;
      RUNNING) ended_polls=0 ;;
      *) ended_polls=0 was_down=1 ;;
    esac
    if [ "$ended_polls" -ge 4 ]; then soak_log "         $task ended (${state:-purged}): not requeued"; break; fi
    now_restarts=$(task_field "$task" Restarts)
    if [ "$was_down" = 1 ] && [ "$state" = RUNNING ] && [ "${now_restarts:-0}" -gt "${restarts:-0}" ]; then
      soak_log "         $task runs again (restarts $now_restarts)"
      break
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      soak_log "         $task not running again after 180 s (state $state): releasing the others"
      break
    fi
    sleep 0.5
  done
  # A preempting job that found its target ending would preempt the next task instead, unheld.
  if [ -n "$preemptor" ]; then
    deadline=$((SECONDS + 60))
    while job_in_queue "$preemptor" && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.5; done
  fi
  [ -z "$held" ] || scontrol release "$held" > /dev/null 2>&1 || soak_log "warning: scontrol release $held failed"
}

# chaos_loop JOB EXPERIMENT_DIR INJECT_UNTIL HARD_DEADLINE (in $SECONDS): events every
# gap_min..gap_max seconds until INJECT_UNTIL, then wait for the job; returns 1 if the job is
# still queued at HARD_DEADLINE (it is then cancelled).
chaos_loop() {
  local job=$1 dir=$2 inject_until=$3 hard_deadline=$4 next
  next=$((SECONDS + $(random_between "$gap_min" "$gap_max")))
  while job_in_queue "$job"; do
    if [ "$SECONDS" -ge "$hard_deadline" ]; then
      soak_log "job $job still queued at the deadline: cancelling it"
      scancel "$job" || true
      return 1
    fi
    if [ "$SECONDS" -ge "$next" ] && [ "$SECONDS" -lt "$inject_until" ]; then
      disturb "$job" "$dir"
      next=$((SECONDS + $(random_between "$gap_min" "$gap_max")))
    fi
    sleep 1
  done
  return 0
}
