#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The PyTorch DDP example (examples/pytorch/ddp.py: 2 nodes x 1 rank, gloo, Adam + StepLR +
# BatchNorm + Dropout, checkpointed with dlx.torch) interrupted four ways, each run ending with
# parameters, buffers, optimizer and scheduler state, every rank's RNG state and the metric
# tables identical to an uninterrupted run (compare_checkpoints.py: every tensor's bytes):
#   (i) preempted by a `high` job, (ii) `scontrol requeue`d, (iii) chained over 1-minute time
#   limits, (iv) rank 1's trainer SIGKILLed.
# Every rank must resume from the same checkpoint, so this fails if rank 1 starts afresh (as it
# did before the resume rendezvous). The cases (ii)-(iv) and the reference run share the cluster
# (4 CPUs per node); the preemption, which requeues every trial of the low partition, runs alone.
source "$(dirname "$0")/resume_lib.sh"

/usr/bin/python3 -c 'import torch' 2>/dev/null || fail "python3-torch is not installed (scripts/install-deps.sh)"
RESUME_ENTRYPOINT="[/usr/bin/python3, examples/pytorch/ddp.py]"
RESUME_HPARAMS="{learning_rate: 0.01, batch_size: 16, epochs: 4, hidden: 32, dropout: 0.1, seed: 7, step_delay_ms: 150}"
RESUME_CHECKPOINT="{period: {batches: 40}, keep_latest: 2}"
TRAINER_COMM=python3

jobs_started=()
trap 'scancel "${jobs_started[@]}" 2> /dev/null || true' EXIT
# start NAME [SBATCH_ARGS...]: submits $WORK/NAME.yaml, waits for its trial directory; sets
# started_job and started_dir.
start() {
  started_job=$(submit_trial "$@")
  jobs_started+=("$started_job")
  wait_until 60 "the job link of $1" test -L "$(user_storage)/.jobs/$started_job"
  started_dir=$(trial_dir "$started_job")
}
# compare NAME JOB DIR ARGS...: identical to the reference, completed (compare_checkpoints.py).
compare() {
  local name=$1 job=$2 dir=$3; shift 3
  /usr/bin/python3 "$SOURCE_DIR/tests/tools/compare_checkpoints.py" "$reference" "$dir" \
    --tensor model/0.weight --tensor model/1.running_mean --tensor optimizer/state/0/exp_avg \
    --tensor rng/rank-1/torch "$@" ||
    fail "$name is not identical to the uninterrupted run: $(tail -n 30 "$WORK/$name-${job}_0.out")"
  expect_contains "dlx status of $name" "$(as_user dlx status "$job")" "# 1 trial: 1 completed"
}

for name in torch-reference torch-requeue torch-limit; do write_resume_experiment "$name"; done
write_resume_experiment torch-kill "max_restarts: 1"
write_resume_experiment torch-preempt
start torch-reference; reference_job=$started_job reference=$started_dir
start torch-requeue; requeue_job=$started_job requeue_dir=$started_dir
start torch-kill; kill_job=$started_job kill_dir=$started_dir
start torch-limit --time=1 --signal=USR2@20; limit_job=$started_job limit_dir=$started_dir

# (ii) scontrol requeue once a checkpoint is written.
wait_until 240 "a checkpoint of torch-requeue" checkpoint_past "$requeue_dir" 80
scontrol requeue "${requeue_job}_0"
note "scontrol requeue ${requeue_job}_0"
# (iv) SIGKILL rank 1's trainer between two checkpoints: the steps since the last are redone.
wait_until 240 "a checkpoint of torch-kill" checkpoint_past "$kill_dir" 80
sleep 2
job_running "$kill_job" || fail "torch-kill finished before the kill (make the training longer)"
victim=$(trainer_pid "$kill_job" 1)
kill -9 "$victim"
note "killed rank 1's trainer (pid $victim) after the checkpoint of step $(latest_checkpoint_step "$kill_dir")"

for job in "$reference_job" "$requeue_job" "$kill_job" "$limit_job"; do wait_for_job "$job" 600; done
/usr/bin/python3 -c "import h5py,sys; f=h5py.File(sys.argv[1]+'/trial.h5','r'); sys.exit(int(f.attrs['restarts']) != 0)" "$reference" ||
  fail "the reference run was interrupted: $(tail -n 20 "$WORK/torch-reference-${reference_job}_0.out")"

compare torch-requeue "$requeue_job" "$requeue_dir" --notices 1
grep -q "ddp: 2 ranks, backend gloo, device cpu, 4096 examples from synthetic, resuming at step" "$WORK/torch-requeue-${requeue_job}_0.out" ||
  fail "torch-requeue did not resume: $(cat "$WORK/torch-requeue-${requeue_job}_0.out")"
note "(ii) requeued by scontrol: resumed on both ranks, identical"

compare torch-kill "$kill_job" "$kill_dir" --crashes 1
# Rank 0 ends either through gloo ("Connection closed by peer") or through dlx-launch's crash
# signal, whichever comes first; the restart names rank 1's SIGKILL either way.
[[ $(restart_attr "$kill_dir" 1 reason) == *"rank 1 on n"*": killed by SIGKILL (exit 137)"* ]] ||
  fail "the crash restart does not name rank 1's SIGKILL: $(restart_attr "$kill_dir" 1 reason)"
note "(iv) rank 1 SIGKILLed: requeued, resumed on both ranks, identical"

restarts=$(/usr/bin/python3 -c "import h5py,sys; print(int(h5py.File(sys.argv[1]+'/trial.h5','r').attrs['restarts']))" "$limit_dir")
[ "$restarts" -ge 1 ] || fail "torch-limit finished in one allocation: no time-limit chain (make it longer)"
case "$(cat "$WORK/torch-limit-${limit_job}_0.out")" in
  *"DUE TO TIME LIMIT"*) fail "an allocation of torch-limit was killed by its time limit" ;;
esac
[[ $(restart_attr "$limit_dir" 1 reason) == "requeue: checkpoint at step "*" after SIGUSR2 (time_limit: "* ]] ||
  fail "torch-limit's first restart was not the time-limit notice: $(restart_attr "$limit_dir" 1 reason)"
compare torch-limit "$limit_job" "$limit_dir" --notices "$restarts"
note "(iii) chained over $((restarts + 1)) allocations of 1 minute: identical"

# (i) preemption, alone on the cluster.
start torch-preempt; preempt_job=$started_job preempt_dir=$started_dir
wait_until 240 "a checkpoint of torch-preempt" checkpoint_past "$preempt_dir" 80
job_running "$preempt_job" || fail "torch-preempt finished before the preemption (make the training longer)"
preempt_now
wait_until 120 "the preempted trial's requeue" restarts_at_least "$preempt_dir" 1
wait_for_job "$preempt_job" 400
compare torch-preempt "$preempt_job" "$preempt_dir" --notices 1
note "(i) preempted by a high-priority job: resumed on both ranks, identical"
