#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Each array task gets its trial's environment (docs/config-reference.md, "What a trial sees")
# from the plugin's remote context, and dlx-launch adds the torchrun-compatible variables.
source "$(dirname "$0")/lib.sh"

cat > "$WORK/env.yaml" <<'YAML'
name: envcheck
entrypoint: [sh, -c, 'env | grep -E "^(DLX_|RANK=|WORLD_SIZE=|LOCAL_RANK=|LOCAL_WORLD_SIZE=|MASTER_|TRIAL_GREETING=)" | sort > "$DLX_EXPERIMENT_DIR/env-$DLX_TRIAL_ID-$RANK.txt"']
seed: 11
environment: {TRIAL_GREETING: hello from the experiment file}
hyperparameters:
  optim:
    lr: {type: log, minval: -3, maxval: -1}
    kind: {type: categorical, vals: [sgd, adam]}
  drop-out: 0.25
searcher: {name: random, metric: loss, max_trials: 2}
resources: {nodes_per_trial: 1, tasks_per_node: 2}
YAML
chmod a+r "$WORK/env.yaml"
submitted=$(as_user sbatch --parsable --wait --output=env-%A_%a.out --dl-experiment=env.yaml examples/job.sh)
job=$(job_id_of "$submitted")
wait_for_job "$job" 120
dir=$(readlink "$(user_storage)/.jobs/$job")
plan=$(as_user dlx plan --json "$dir/experiment.yaml")
for trial in 0 1; do
  for rank in 0 1; do
    file=$dir/env-$trial-$rank.txt
    [ -f "$file" ] || fail "trial $trial rank $rank wrote no environment ($(cat "$WORK"/env-"$job"_$trial.out))"
    env_text=$(cat "$file")
    expect_contains "trial $trial" "$env_text" "DLX_TRIAL_ID=$trial"
    expect_contains "trial $trial" "$env_text" "DLX_EXPERIMENT_DIR=$dir"
    expect_contains "trial $trial" "$env_text" "DLX_CHECKPOINT_DIR=$dir/trials/$trial/checkpoints"
    expect_contains "trial $trial" "$env_text" "DLX_LATEST_CHECKPOINT="
    expect_contains "trial $trial" "$env_text" "DLX_HP_DROP_OUT=0.25"
    expect_contains "trial $trial" "$env_text" "RANK=$rank"
    expect_contains "trial $trial" "$env_text" "WORLD_SIZE=2"
    expect_contains "trial $trial" "$env_text" "LOCAL_WORLD_SIZE=2"
    expect_contains "trial $trial" "$env_text" "MASTER_PORT="
    expect_contains "trial $trial" "$env_text" "TRIAL_GREETING=hello from the experiment file"
    hparams=$(grep '^DLX_HPARAMS=' "$file" | cut -d= -f2-)
    # The plan lists dotted names; the trainer gets the group nested, as Determined passes it.
    expected=$(echo "$plan" | /usr/bin/python3 -c "
import json, sys
nested = {}
for name, value in json.load(sys.stdin)['trials'][$trial]['hparams'].items():
    *groups, last = name.split('.')
    node = nested
    for group in groups:
        node = node.setdefault(group, {})
    node[last] = value
print(json.dumps(nested, separators=(',', ':')))")
    [ "$hparams" = "$expected" ] || fail "trial $trial: DLX_HPARAMS=$hparams, plan says $expected"
    kind=$(echo "$expected" | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['optim']['kind'])")
    expect_contains "trial $trial" "$env_text" "DLX_HP_OPTIM_KIND=$kind"
    expect_contains "trial $trial" "$env_text" "DLX_HP_OPTIM_LR="
    # Rank 0 records why a run stops at a notice; its fallback when squeue is silent then is the
    # job's end time as dlx-launch saw it at the start (notice_cause.hpp). Only rank 0 asks.
    end_time=$(grep '^DLX_JOB_END_TIME=' "$file" | cut -d= -f2- || true)
    if [ "$rank" = 0 ]; then
      [ "$end_time" = UNLIMITED ] || [ "${end_time:-0}" -gt "$(date +%s)" ] ||
        fail "trial $trial rank 0: DLX_JOB_END_TIME='$end_time', expected UNLIMITED or a future unix time"
    else
      [ -z "$end_time" ] || fail "trial $trial rank $rank: DLX_JOB_END_TIME=$end_time (only rank 0 asks squeue)"
    fi
  done
done
note "trial environment verified for 2 trials x 2 ranks"
