#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Finding 1 (issue 17), dlx-launch's side: whatever DLX_EXPERIMENT_DIR names, dlx-launch runs the
# snapshot's entrypoint only when the experiment directory is the user's own (every directory
# from / down trusted; the snapshot a regular file of the user's). Also finding 3's blocking open:
# a FIFO in the snapshot's place is refused at once.
#   launch_attack_test.sh DLX_LAUNCH DLX
source "$(dirname "$0")/lib.sh"
install_binaries "$1" "$2"
launch=$SCRATCH/bin/dlx-launch
storage=$SCRATCH/storage
install -d -m 1777 "$storage"
install -d -m 1777 "$SCRATCH/out"
marker=$SCRATCH/out/pwned
payload() {  # an experiment whose entrypoint leaves the marker, as whoever runs it
  printf 'name: %s\nentrypoint: "id -un > %s"\nsearcher: {name: single, metric: accuracy}\n' "$1" "$marker"
}
# Outside Slurm with an explicit trial id: dlx-launch reads the snapshot and runs its entrypoint.
run_trial() {  # run_trial USER EXPERIMENT_DIR
  AS_ENV="DLX_EXPERIMENT_DIR=$2 DLX_TRIAL_ID=0" as "$1" timeout 60 "$launch" 2>&1
}

# Control: alice's own experiment runs.
as "$ALICE" mkdir -p -m 0750 "$storage/$ALICE/own/trials"
payload own | as "$ALICE" tee "$storage/$ALICE/own/experiment.yaml" > /dev/null
out=$(run_trial "$ALICE" "$storage/$ALICE/own") || fail "alice's own experiment did not run: $out"
[ "$(cat "$marker" 2>/dev/null)" = "$ALICE" ] || fail "alice's own entrypoint did not run: $out"
rm -f "$marker"
note "alice's own experiment runs"

# mallory's experiment directory, readable by all, handed to alice's dlx-launch.
as "$MALLORY" mkdir -p -m 0755 "$storage/$MALLORY/trap" "$storage/$MALLORY/trap/trials"
payload trap | as "$MALLORY" tee "$storage/$MALLORY/trap/experiment.yaml" > /dev/null
as "$MALLORY" chmod 0644 "$storage/$MALLORY/trap/experiment.yaml"
if out=$(run_trial "$ALICE" "$storage/$MALLORY/trap"); then fail "alice ran mallory's experiment: $out"; fi
expect_contains "mallory's directory" "$out" "$storage/$MALLORY is owned by $MALLORY, not by $ALICE or root"
[ ! -e "$marker" ] || fail "mallory's entrypoint ran as $(cat "$marker")"
note "refused: $out"

# The squat: mallory made <storage>/dlxalice (0777) before alice; alice's experiment inside it
# (which mallory could swap at will) is refused, though alice owns the experiment directory.
rm -rf "${storage:?}/$ALICE"
as "$MALLORY" mkdir -m 0777 "$storage/$ALICE"
as "$ALICE" mkdir -m 0750 "$storage/$ALICE/exp"
payload exp | as "$ALICE" tee "$storage/$ALICE/exp/experiment.yaml" > /dev/null
if out=$(run_trial "$ALICE" "$storage/$ALICE/exp"); then fail "alice ran an experiment in mallory's directory: $out"; fi
expect_contains "squatted user directory" "$out" "$storage/$ALICE is owned by $MALLORY, not by $ALICE or root, in a directory every user can write to"
[ ! -e "$marker" ] || fail "the entrypoint ran in a squatted directory"
note "refused: $out"
rm -rf "${storage:?}/$ALICE"

# The snapshot as a link to mallory's file, and as a FIFO: refused at once, nothing run.
as "$ALICE" mkdir -p -m 0750 "$storage/$ALICE/exp"
as "$ALICE" ln -s "$storage/$MALLORY/trap/experiment.yaml" "$storage/$ALICE/exp/experiment.yaml"
if out=$(run_trial "$ALICE" "$storage/$ALICE/exp"); then fail "a linked snapshot was run: $out"; fi
expect_contains "linked snapshot" "$out" "$storage/$ALICE/exp/experiment.yaml is a symbolic link"
as "$ALICE" rm "$storage/$ALICE/exp/experiment.yaml"
as "$ALICE" mkfifo -m 0640 "$storage/$ALICE/exp/experiment.yaml"
if out=$(run_trial "$ALICE" "$storage/$ALICE/exp"); then fail "a FIFO snapshot was accepted: $out"; fi
expect_contains "FIFO snapshot" "$out" "experiment.yaml is a FIFO, not a regular file"
[ ! -e "$marker" ] || fail "an entrypoint ran"
note "refused at once: $out"

# dlx validate on a FIFO (a user's own mistake) says so instead of waiting for a writer.
if out=$(as "$ALICE" timeout 60 "$SCRATCH/bin/dlx" validate "$storage/$ALICE/exp/experiment.yaml" 2>&1); then
  fail "dlx validate accepted a FIFO: $out"
fi
expect_contains "dlx validate on a FIFO" "$out" "it is a FIFO, not a regular file"
note "dlx validate: $out"

# Inside a user namespace that maps only alice (a rootless container): root's directories show
# as the overflow uid and are taken for root's, so alice's own experiment still runs; one that is
# not hers (mallory's, shown as the overflow uid too) is still refused.
if as "$ALICE" unshare --user --map-user="$(id -u "$ALICE")" --map-group="$(id -g "$ALICE")" true 2> /dev/null; then
  in_namespace() { AS_ENV="DLX_EXPERIMENT_DIR=$1 DLX_TRIAL_ID=0" as "$ALICE" unshare --user \
    --map-user="$(id -u "$ALICE")" --map-group="$(id -g "$ALICE")" timeout 60 "$launch" 2>&1; }
  rm -f "$marker"
  as "$ALICE" mkdir -p -m 0750 "$storage/$ALICE/own/trials"
  payload own | as "$ALICE" tee "$storage/$ALICE/own/experiment.yaml" > /dev/null
  out=$(in_namespace "$storage/$ALICE/own") || fail "alice's own experiment did not run in a user namespace: $out"
  [ "$(cat "$marker" 2>/dev/null)" = "$ALICE" ] || fail "alice's entrypoint did not run in a user namespace: $out"
  rm -f "$marker"
  if out=$(in_namespace "$storage/$MALLORY/trap"); then fail "alice ran mallory's experiment in a user namespace: $out"; fi
  expect_contains "mallory's directory in a user namespace" "$out" "$storage/$MALLORY/trap is owned by"
  [ ! -e "$marker" ] || fail "mallory's entrypoint ran in a user namespace"
  note "in a user namespace: alice's own experiment runs, mallory's is refused: $out"
else
  note "user namespaces unavailable here: the rootless-container case is not checked"
fi
