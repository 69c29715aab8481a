#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 31, finding 1: the node-local directory (the data cache and the code copy) as two real
# users. mallory controls the base (her /tmp/<alice's name>, which alice's `data: to:` or a site's
# local_dir=/local/%u names) or a directory above it, and swaps alice's dlx-<uid> (or the base
# itself) for her own directory, holding her data under the very cache key alice's data gets and
# her own train.sh, with renameat2(RENAME_EXCHANGE) as fast as she can while alice's trials start.
# dlx-launch must refuse every time, naming the directory and the fix, and never let alice read
# mallory's data or run her file. In a base only root and alice can change (a 1777 /tmp), the same
# racer gets nowhere and every trial runs alice's own code on alice's own data. A dlx-<uid> that
# mallory made first in a 1777 base is refused (a denial of service, not a takeover).
#   node_local_race_test.sh DLX_LAUNCH DLX SWAP_RACER
source "$(dirname "$0")/lib.sh"
install_binaries "$1" "$2" "$3"
launch=$SCRATCH/bin/dlx-launch
racer=$SCRATCH/bin/dlx_swap_racer
runs=${DLX_RACE_RUNS:-25}
auid=$(id -u "$ALICE")
muid=$(id -u "$MALLORY")
tmp=$SCRATCH/tmp            # the node's /tmp
out=$SCRATCH/out            # where trainers leave their marks
storage=$SCRATCH/storage
install -d -m 1777 "$tmp" "$out" "$storage"
install -d -o "$ALICE" -g "$ALICE" -m 0755 "$SCRATCH/alice-data"
echo ALICE-DATA | as "$ALICE" tee "$SCRATCH/alice-data/data.txt" > /dev/null

# make_experiment USER NAME ENTRYPOINT [DATA_TO]: an experiment directory with a code snapshot
# (code/train.sh, code.json) whose trainer says who ran whose code on whose data.
make_experiment() {
  local user=$1 name=$2 entrypoint=$3 to=${4:-} dir=$storage/$1/$2
  as "$user" mkdir -p -m 0750 "$storage/$user" "$dir" "$dir/trials" "$dir/code"
  {
    printf 'name: %s\nentrypoint: "%s"\nsearcher: {name: single, metric: accuracy}\n' "$name" "$entrypoint"
    [ -z "$to" ] || printf 'data: {stage: [%s], to: %s}\n' "$SCRATCH/alice-data" "$to"
  } | as "$user" tee "$dir/experiment.yaml" > /dev/null
  printf 'echo "$(id -un) ran %s code on data=$(cat "$DLX_DATA_DIR/data.txt" 2>/dev/null)" >> %s/ran\n' \
    "$user" "$out" | as "$user" tee "$dir/code/train.sh" > /dev/null
  echo '{"format_version": 1, "workdir": ""}' | as "$user" tee "$dir/code.json" > /dev/null
}
run_trial() {  # run_trial EXPERIMENT_DIR [NAME=VALUE...]: alice's dlx-launch, as a trial outside Slurm
  local dir=$1
  shift
  AS_ENV="DLX_EXPERIMENT_DIR=$dir DLX_TRIAL_ID=0 TMPDIR=$tmp $*" as "$ALICE" timeout 60 "$launch" 2>&1
}
check_never_fooled() {  # nothing of mallory's was read or run
  if grep -v "^$ALICE ran $ALICE code on data=ALICE-DATA$" "$out/ran" 2> /dev/null; then
    fail "$1: a trial ran other code or read other data (above)"
  fi
  [ ! -e "$out/pwned" ] || fail "$1: mallory's train.sh ran as $(cat "$out/pwned")"
}
# race WHAT A B COMMAND...: mallory's racer exchanges A and B while COMMAND runs; prints its count.
race() {
  local what=$1 a=$2 b=$3 stop=$SCRATCH/stop-racer
  shift 3
  rm -f "$stop"
  as "$MALLORY" "$racer" "$a" "$b" "$stop" > "$SCRATCH/racer.out" &
  local racer_pid=$!
  "$@"
  touch "$stop"
  wait "$racer_pid" || fail "$what: the racer failed"
  note "$what: racer $(cat "$SCRATCH/racer.out")"
}
swapped() { sed -E 's/.*swapped ([0-9]+).*/\1/' "$SCRATCH/racer.out"; }

# mallory's bait: her own run stages alice's (readable) data into her own cache, so her copy sits
# under the key alice's trials look for; she puts her data in it, a code copy with her train.sh
# beside it, and opens it all to everyone (as the finding's attack did).
mallory_base=$SCRATCH/mallory-base
install -d -o "$MALLORY" -g "$MALLORY" -m 0755 "$mallory_base"
make_experiment "$MALLORY" prep true "$mallory_base"
AS_ENV="DLX_EXPERIMENT_DIR=$storage/$MALLORY/prep DLX_TRIAL_ID=0 TMPDIR=$mallory_base" as "$MALLORY" \
  timeout 60 "$launch" > "$SCRATCH/prep.out" 2>&1 || fail "mallory's preparation failed: $(cat "$SCRATCH/prep.out")"
bait=$mallory_base/dlx-$muid
key=$(basename "$(find "$bait/data" -mindepth 1 -maxdepth 1 -type d)")
[ -n "$key" ] || fail "mallory's preparation staged nothing: $(ls -laR "$bait")"
as "$MALLORY" chmod -R u+w "$bait/data/$key"
echo MALLORY-DATA | as "$MALLORY" tee "$bait/data/$key/data.txt" > /dev/null
as "$MALLORY" mkdir -p "$bait/code-pid1-0-0"
echo "id -un > $out/pwned" | as "$MALLORY" tee "$bait/code-pid1-0-0/train.sh" > /dev/null
as "$MALLORY" chmod -R a+rwX "$bait"
note "mallory's bait: her data under alice's cache key $key"

# ---- 1. the plain case: data: {to: <tmp>/dlxalice}, made by mallory (her directory, 0777).
squat=$tmp/$ALICE
as "$MALLORY" mkdir -m 0777 "$squat"
make_experiment "$ALICE" data-to "sh train.sh" "$squat"
if output=$(run_trial "$storage/$ALICE/data-to"); then fail "alice staged into mallory's $squat: $output"; fi
expect_contains "data: to: mallory's directory" "$output" \
  "refusing the node-local directory $squat for the data cache: $squat is owned by $MALLORY, not by $ALICE or root"
expect_contains "data: to: mallory's directory (the fix)" "$output" \
  "use a directory that only you and root can change, such as /tmp, or a local_dir= made per user by the site; choose another node-local directory with the experiment's \`data: to:\`"
[ -z "$(ls -A "$squat")" ] || fail "a refused trial made $(ls -A "$squat") in mallory's directory"
check_never_fooled "data: to: mallory's directory"
note "refused: $(echo "$output" | grep -m1 refusing)"

# The same directory as the site's local_dir=/local/%u for the code copy.
make_experiment "$ALICE" code "sh train.sh"
if output=$(run_trial "$storage/$ALICE/code" DLX_SITE_LOCAL_DIR="$squat"); then
  fail "alice copied her code into mallory's $squat: $output"
fi
expect_contains "local_dir= in mallory's directory" "$output" \
  "refusing the node-local directory $squat for the node-local code copy: $squat is owned by $MALLORY"
expect_contains "local_dir= in mallory's directory (the fix)" "$output" \
  "the code copy goes where the site's local_dir=, else Slurm's TmpFS, else \$TMPDIR, else /tmp says (ask your administrator)"
check_never_fooled "local_dir= in mallory's directory"
note "refused: $(echo "$output" | grep -m1 refusing)"

# ---- 1. the race: alice's dlx-<uid> already there (made by an older dlx, alice's own), mallory's
# bait beside it, exchanged with it without pause while alice's trials start.
install -d -o "$ALICE" -g "$ALICE" -m 0700 "$squat/dlx-$auid"
as "$MALLORY" mv "$bait" "$squat/bait"
refused=0
# many_trials NAME DATA_TO EXPECTED [NAME=VALUE...]: $runs trials, each of a fresh experiment (a
# trial's record says it ran), every one refused with EXPECTED.
many_trials() {
  local name=$1 to=$2 expected=$3 i
  shift 3
  for i in $(seq "$runs"); do
    make_experiment "$ALICE" "$name-$i" "sh train.sh" "$to"
    if output=$(run_trial "$storage/$ALICE/$name-$i" "$@"); then fail "$name, run $i was not refused: $output"; fi
    expect_contains "$name, run $i" "$output" "$expected"
    refused=$((refused + 1))
  done
}
race "the cache's dlx-<uid> swapped" "$squat/dlx-$auid" "$squat/bait" \
  many_trials cache-race "$squat" "refusing the node-local directory $squat for the data cache"
[ "$(swapped)" -gt 0 ] || fail "the racer never managed an exchange: the race was not run"
race "the code copy's dlx-<uid> swapped" "$squat/dlx-$auid" "$squat/bait" \
  many_trials code-race "" "refusing the node-local directory $squat for the node-local code copy" \
  DLX_SITE_LOCAL_DIR="$squat"
[ "$(swapped)" -gt 0 ] || fail "the racer never managed an exchange: the race was not run"
check_never_fooled "dlx-<uid> swapped"
note "$refused trials refused while mallory swapped dlx-$auid for her bait"

# The base itself, alice's own 0700 directory, inside mallory's (a lab directory she owns):
# exchanged with her bait as a whole.
lab=$tmp/lab
as "$MALLORY" mkdir -m 0777 "$lab"
as "$ALICE" mkdir -m 0700 "$lab/alice-base"
as "$MALLORY" mv "$squat/bait" "$lab/bait"
refused=0
race "the base swapped" "$lab/alice-base" "$lab/bait" \
  many_trials lab-race "$lab/alice-base" "refusing the node-local directory $lab/alice-base for the data cache: $lab is owned by $MALLORY"
[ "$(swapped)" -gt 0 ] || fail "the racer never managed an exchange: the race was not run"
check_never_fooled "the base swapped"
note "$refused trials refused while mallory swapped the base itself"

# ---- a base only root and alice can change (<tmp>, 1777 with the sticky bit): the racer gets
# nowhere (the kernel refuses the exchange), and every trial runs alice's code on alice's data.
as "$MALLORY" mv "$lab/bait" "$tmp/bait-$MALLORY"
rm -f "$out/ran"
ran_all() {
  local i
  for i in $(seq "$runs"); do
    make_experiment "$ALICE" "sticky-$i" "sh train.sh" "$tmp"
    output=$(run_trial "$storage/$ALICE/sticky-$i") || fail "run $i in the sticky base failed: $output"
  done
}
race "dlx-<uid> in a sticky base" "$tmp/dlx-$auid" "$tmp/bait-$MALLORY" ran_all
[ "$(swapped)" = 0 ] || fail "the kernel let mallory exchange alice's directory in a sticky base"
[ "$(grep -c "^$ALICE ran $ALICE code on data=ALICE-DATA$" "$out/ran")" = "$runs" ] ||
  fail "not every trial ran alice's code on her data: $(cat "$out/ran")"
check_never_fooled "sticky base"
note "sticky base: $runs trials ran alice's own code on her own data; the racer swapped nothing"

# ---- a dlx-<uid> mallory made first in the 1777 base: refused, nothing run (the documented
# denial of service).
rm -rf "${tmp:?}/dlx-$auid"
as "$MALLORY" mkdir -m 0777 "$tmp/dlx-$auid"
make_experiment "$ALICE" squatted "sh train.sh" "$tmp"
if output=$(run_trial "$storage/$ALICE/squatted"); then fail "alice used mallory's $tmp/dlx-$auid: $output"; fi
expect_contains "squatted dlx-<uid>" "$output" \
  "refusing the node-local directory $tmp/dlx-$auid: it is owned by $MALLORY, not by you ($ALICE)"
check_never_fooled "squatted dlx-<uid>"
note "squatted dlx-$auid refused: $(echo "$output" | grep -m1 refusing)"
