#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The PyTorch ResNet example (examples/pytorch/resnet.py: AdamW, cosine schedule, checkpoints by
# dlx.torch) searched on the local cluster, as an unprivileged user:
#   - ASHA (resnet_asha.yaml, promotions): every trial ends completed, stopped or paused, none
#     failed; some trial paused at a rung and a later array task resumed it from that rung's
#     checkpoint (a promotion), training on to the next rung;
#   - PBT (resnet_pbt.yaml): every new trial after round 0 starts from the checkpoint the searcher
#     named (recorded in its trial.h5: started_from), a better member's (an exploit; members
#     that go on keep their trial), and the last round's members complete (the replaced ones
#     stay paused).
source "$(dirname "$0")/lib.sh"

/usr/bin/python3 -c 'import torch' 2>/dev/null || fail "python3-torch is not installed (scripts/install-deps.sh)"
submit() {  # submit NAME YAML: the array job id
  local out
  out=$(as_user sbatch --parsable --output="$1-%A_%a.out" --dl-experiment="$2" \
    examples/pytorch/job.sh 2> "$WORK/$1.sbatch.err") || fail "sbatch $2 failed: $(cat "$WORK/$1.sbatch.err")"
  job_id_of "$out"
}
# The stopping variant and adaptive ASHA over the same trainer: variants of resnet_asha.yaml.
sed -e 's/^name: resnet-asha/name: resnet-stop/' -e 's/^  divisor: 2/  divisor: 2\n  stop_once: true/' \
  "$WORK/examples/pytorch/resnet_asha.yaml" > "$WORK/resnet-stop.yaml"
sed -e 's/^name: resnet-asha/name: resnet-adaptive/' -e 's/^  name: async_halving/  name: adaptive_asha/' \
  -e 's/^  max_rungs: 3/  max_rungs: 3\n  mode: aggressive/' \
  "$WORK/examples/pytorch/resnet_asha.yaml" > "$WORK/resnet-adaptive.yaml"
chmod a+r "$WORK"/resnet-*.yaml
asha=$(submit resnet-asha examples/pytorch/resnet_asha.yaml)
expect_contains "sbatch's report" "$(cat "$WORK/resnet-asha.sbatch.err")" "6 trials as array"
pbt=$(submit resnet-pbt examples/pytorch/resnet_pbt.yaml)
stop=$(submit resnet-stop resnet-stop.yaml)
adaptive=$(submit resnet-adaptive resnet-adaptive.yaml)
trap 'scancel "$asha" "$pbt" "$stop" "$adaptive" 2> /dev/null || true' EXIT
for job in "$asha" "$pbt" "$stop" "$adaptive"; do wait_for_job "$job" 600; done

# Stopping ASHA and adaptive ASHA: every trial completed or ended early by the searcher, none
# failed.
for variant in stop:"$stop" adaptive:"$adaptive"; do
  name=resnet-${variant%%:*} job=${variant#*:}
  cat "$WORK/$name-$job"_*.out > "$WORK/$name.all.out"
  grep -q "Traceback" "$WORK/$name.all.out" && fail "a $name task failed: $(grep -A8 Traceback "$WORK/$name.all.out" | head -30)"
  variant_status=$(as_user dlx status "$job") || fail "dlx status $name failed"
  echo "$variant_status"
  expect_contains "dlx status of $name" "$variant_status" "completed at 96"
  /usr/bin/python3 - "$(readlink "$(user_storage)/.jobs/$job")" "$name" <<'PY'
import glob, sys, h5py
text = lambda v: v.decode() if isinstance(v, bytes) else v
states = {}
for record in glob.glob(sys.argv[1] + "/trials/*/trial.h5"):
    with h5py.File(record, "r") as f:
        states[int(record.split("/")[-2])] = text(f.attrs["state"])
# The stopping variant stops; adaptive ASHA's brackets pause (promotions), as async_halving does.
early = "stopped" if sys.argv[2] == "resnet-stop" else "paused"
assert states and all(s in ("completed", early) for s in states.values()), states
assert early in states.values(), f"{sys.argv[2]}: no trial ended early ({early}): {states}"
print(f"{sys.argv[2]}: trial states {dict(sorted(states.items()))}")
PY
done
note "stopping ASHA and adaptive ASHA over the PyTorch ResNet: trials ended early, none failed"

asha_dir=$(readlink "$(user_storage)/.jobs/$asha")
status=$(as_user dlx status "$asha") || fail "dlx status failed"
echo "$status"
expect_contains "dlx status" "$status" "# best: trial"
expect_contains "dlx status" "$status" "completed at 96"
grep -q "paused at 24" <<< "$status" || fail "no trial stayed paused at rung 0 (24 batches)"
cat "$WORK"/resnet-asha-"$asha"_*.out > "$WORK/resnet-asha.all.out"
grep -q "error\|Traceback" "$WORK/resnet-asha.all.out" && fail "an ASHA task failed: $(grep -B2 -A8 "error\|Traceback" "$WORK/resnet-asha.all.out" | head -40)"
grep -Eq "dlx: resuming from .*/checkpoints/step-(24|48)\.h5" "$WORK/resnet-asha.all.out" ||
  fail "no paused trial was resumed from its rung checkpoint: $(grep -h "resnet:" "$WORK/resnet-asha.all.out")"
/usr/bin/python3 - "$asha_dir" <<'PY'
import glob, sys, h5py
text = lambda v: v.decode() if isinstance(v, bytes) else v
states, promoted = {}, []
for record in sorted(glob.glob(sys.argv[1] + "/trials/*/trial.h5")):
    with h5py.File(record, "r") as f:
        trial = int(record.split("/")[-2])
        states[trial] = text(f.attrs["state"])
        steps = list(f["metrics/validation/steps"][:]) if "metrics/validation/steps" in f else []
        if 24 in steps and 48 in steps:
            promoted.append(trial)
assert len(states) == 6, states
assert all(s in ("completed", "stopped", "paused") for s in states.values()), states
assert promoted, f"no trial reported at two rungs: {states}"
print(f"ASHA: trial states {states}; promoted past rung 0: {promoted}")
PY
# dlx ckpt treats dlx.torch's files as any other checkpoint: they verify, and a paused trial's
# rung checkpoint is kept because the searcher references it.
as_user dlx ckpt verify "$asha_dir"/trials/*/checkpoints/step-*.h5 > "$WORK/resnet-asha.verify" ||
  fail "dlx ckpt verify failed: $(cat "$WORK/resnet-asha.verify")"
listing=$(as_user dlx ckpt ls "$asha") || fail "dlx ckpt ls failed: $listing"
expect_contains "dlx ckpt ls" "$listing" "referenced by searcher"
note "ASHA over the PyTorch ResNet: paused, promoted, resumed from rung checkpoints, none failed"

pbt_dir=$(readlink "$(user_storage)/.jobs/$pbt")
cat "$WORK"/resnet-pbt-"$pbt"_*.out > "$WORK/resnet-pbt.all.out"
grep -q "Traceback" "$WORK/resnet-pbt.all.out" && fail "a PBT task failed: $(grep -A8 Traceback "$WORK/resnet-pbt.all.out" | head -40)"
/usr/bin/python3 - "$pbt_dir" <<'PY'
import sys, h5py
text = lambda v: v.decode() if isinstance(v, bytes) else v
population, rounds, length = 4, 3, 32
# Determined's PBT numbering: members that go on keep their trial; each later round replaces
# int(0.25 x 4) = 1 member by a new trial (4 in round 1, 5 in round 2), a copy of the best.
replaced = 1
exploits, completed = [], 0
for trial in range(population + (rounds - 1) * replaced):
    with h5py.File(f"{sys.argv[1]}/trials/{trial}/trial.h5", "r") as f:
        state = text(f.attrs["state"])
        assert state in ("completed", "paused"), (trial, state)  # paused: replaced along the way
        completed += state == "completed"
        if trial < population:
            assert "started_from" not in f.attrs, (trial, text(f.attrs["started_from"]))
            continue
        round_ = 1 + (trial - population) // replaced
        source, step = int(f.attrs["started_from_trial"]), int(f.attrs["started_from_step"])
        assert step == round_ * length, (trial, step)
        assert source < trial, (trial, source)
        assert text(f.attrs["started_from_path"]).endswith(f"trials/{source}/checkpoints/step-{step}.h5")
        validation = list(f["metrics/validation/steps"][:])
        assert validation[-1] >= (round_ + 1) * length, (trial, validation)
        exploits.append(f"trial {trial} (round {round_}) from trial {source}")
assert completed == population, completed  # the last round's members
assert exploits, "no member exploited another's checkpoint"
print("PBT: every later trial started from its named checkpoint; exploits:", "; ".join(exploits))
PY
grep -q "dlx: starting from .*trials/[0-9]*/checkpoints/step-32.h5 (step 32, .*the searcher's start checkpoint" "$WORK/resnet-pbt.all.out" ||
  fail "no PBT trial logged its start from another trial's checkpoint"
note "PBT over the PyTorch ResNet: exploits start from the parent's checkpoint"
