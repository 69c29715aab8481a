#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Finding 7 (issue 17): mallory made her trials/0 a link to alice's trial and asked root to run
# `dlx ckpt gc` on her experiment: root deleted alice's checkpoint. Now gc acts with the owner's
# rights (as root it becomes the owner first), lists no trial or checkpoint that is a link, and
# refuses an experiment reached through a directory another user owns.
#   ckpt_gc_attack_test.sh DLX SAMPLE_CHECKPOINT_WRITER
source "$(dirname "$0")/lib.sh"
install_binaries "$1" "$2"
dlx=$SCRATCH/bin/dlx
writer=$SCRATCH/bin/$(basename "$2")

storage=$SCRATCH/storage
install -d -m 1777 "$storage"
experiment_yaml() {
  printf 'name: %s\nentrypoint: [true]\nsearcher: {name: single, metric: accuracy}\ncheckpoint: {keep_latest: 1}\n' "$1"
}
# alice: an experiment with one trial holding a checkpoint (step-100.h5, valid), a damaged one
# (step-200.h5) and the temporary file of an old save that died.
alice_trial=$storage/$ALICE/exp/trials/0
as "$ALICE" mkdir -p -m 0750 "$storage/$ALICE" "$storage/$ALICE/exp" "$storage/$ALICE/exp/trials" "$alice_trial"
experiment_yaml exp | as "$ALICE" tee "$storage/$ALICE/exp/experiment.yaml" > /dev/null
as "$ALICE" mkdir -m 0750 "$alice_trial/checkpoints"
as "$ALICE" "$writer" "$alice_trial/checkpoints"
as "$ALICE" touch -d '3 hours ago' "$alice_trial/checkpoints/.tmp.step-300.h5.1.2.3"
alice_files=$(cd "$alice_trial/checkpoints" && ls -A | sort)
[ "$(echo "$alice_files" | wc -l)" = 3 ] || fail "setup: alice's checkpoints: $alice_files"

# mallory: her own experiment whose trials/0 is a link to alice's trial.
mexp=$storage/$MALLORY/exp
as "$MALLORY" mkdir -p -m 0750 "$storage/$MALLORY" "$mexp" "$mexp/trials"
experiment_yaml exp | as "$MALLORY" tee "$mexp/experiment.yaml" > /dev/null
as "$MALLORY" ln -s "$alice_trial" "$mexp/trials/0"

out=$("$dlx" ckpt gc --remove-invalid --tmp-age-minutes 1 "$mexp" 2>&1) || fail "root's gc of mallory's experiment failed: $out"
expect_contains "root's gc of mallory's experiment" "$out" "# running as $MALLORY, the owner of $mexp, not as root"
expect_contains "root's gc of mallory's experiment" "$out" "# deleted 0 files"
[ "$(cd "$alice_trial/checkpoints" && ls -A | sort)" = "$alice_files" ] ||
  fail "root's gc of mallory's experiment deleted alice's files: now $(ls -A "$alice_trial/checkpoints")"
note "root's gc of mallory's experiment ran as mallory and left alice's trial alone"

# The same link one level down: trials/1 is mallory's, its checkpoints/ a link to alice's.
as "$MALLORY" mkdir -m 0750 "$mexp/trials/1"
as "$MALLORY" ln -s "$alice_trial/checkpoints" "$mexp/trials/1/checkpoints"
"$dlx" ckpt gc --remove-invalid --tmp-age-minutes 1 "$mexp" > "$SCRATCH/gc.out" 2>&1 || true
[ "$(cd "$alice_trial/checkpoints" && ls -A | sort)" = "$alice_files" ] ||
  fail "gc through a linked checkpoints/ deleted alice's files: $(cat "$SCRATCH/gc.out")"
note "a checkpoints/ linked to alice's: nothing of hers deleted"

# alice's experiment reached through a link in mallory's directory: refused before anything is
# read (root would act as alice, on a path mallory chose).
as "$MALLORY" ln -s "../$ALICE/exp" "$storage/$MALLORY/alias"
if out=$("$dlx" ckpt gc --remove-invalid "$storage/$MALLORY/alias" 2>&1); then
  fail "root's gc through mallory's link was accepted: $out"
fi
expect_contains "root's gc through mallory's link" "$out" "$storage/$MALLORY is owned by $MALLORY, not by $ALICE or root"
[ "$(cd "$alice_trial/checkpoints" && ls -A | sort)" = "$alice_files" ] || fail "gc through a link deleted alice's files"
note "refused: $out"

# mallory (in alice's group) runs gc on alice's experiment: not hers, refused.
chmod 0750 "$storage/$ALICE"
if out=$(as "$MALLORY" "$dlx" ckpt gc --remove-invalid "$storage/$ALICE/exp" 2>&1); then
  fail "mallory's gc of alice's experiment was accepted: $out"
fi
expect_contains "mallory's gc of alice's experiment" "$out" "$storage/$ALICE/exp belongs to $ALICE: only its owner"
[ "$(cd "$alice_trial/checkpoints" && ls -A | sort)" = "$alice_files" ] || fail "mallory's gc deleted alice's files"
note "refused: $out"

# Root's gc of alice's own experiment works, as alice: the stale temporary goes, the checkpoints
# stay (the sample's belong to another trial: only --remove-invalid would delete them).
out=$("$dlx" ckpt gc --tmp-age-minutes 1 "$storage/$ALICE/exp" 2>&1) || fail "root's gc of alice's experiment: $out"
expect_contains "root's gc of alice's experiment" "$out" "# running as $ALICE"
expect_contains "root's gc of alice's experiment" "$out" "# deleted 1 files"
[ "$(cd "$alice_trial/checkpoints" && ls -A | sort | paste -sd ' ')" = "step-100.h5 step-200.h5" ] ||
  fail "root's gc of alice's experiment left: $(ls -A "$alice_trial/checkpoints")"
note "root's gc of alice's experiment ran as alice: $(echo "$out" | tail -1)"
