#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Data staging (issue 22, item 2), as unprivileged users on the local cluster, whose plugstack
# gives each node its own local_dir (<cluster>/tmp/%n, beside its TmpFS):
#   - sbatch refuses a missing or unreadable path and datasets over the cache's cap, naming them,
#     with nothing queued and no experiment directory;
#   - a 6-trial experiment on the 3 nodes stages a 64 MiB directory: every trial reads
#     byte-identical data from DLX_DATA_DIR, under its node's directory and not on shared
#     storage; one copy per node (the same inode for every trial of a node), the other trials
#     reuse it (one "copied" line per node, "reused" for the rest);
#   - a second experiment reuses every node's copy (no copy, the same inodes);
#   - a copy killed midway (an unfinished .staging-* directory and an entry without its marker)
#     is redone, never used;
#   - a second user's trial gets a cache of its own, and neither user can see into the other's;
#   - a 2-node trial: both nodes hold the data before rank 0's trainer starts.
source "$(dirname "$0")/lib.sh"
source "$SOURCE_DIR/tests/security/users.sh"  # a second real user: $ALICE

uid=$(id -u "$DLX_TEST_USER")
node_cache() { echo "$CLUSTER/tmp/$1/dlx-$2/data"; }  # node_cache NODE UID
out_of() { cat "$WORK"/ds-"$1"_*.out 2>/dev/null; }   # every task's output of job $1

# ---- the datasets, made by the test user: 64 MiB in 16 files and a nested directory ----
as_user bash -c 'rm -rf dataset dataset2 train-data.sh && mkdir -p dataset/shards dataset/meta &&
  for i in $(seq 1 16); do head -c 4194304 /dev/urandom > dataset/shards/part-$i.bin; done &&
  echo "labels v1" > dataset/meta/labels.txt &&
  (cd dataset && find . -type f | sort | xargs sha256sum) > dataset.sha256 &&
  mkdir dataset2 && head -c 8388608 /dev/urandom > dataset2/blob.bin &&
  (cd dataset2 && sha256sum ./blob.bin) > dataset2.sha256 && chmod -R a+rX dataset dataset2'
[ "$(du -sb "$WORK/dataset" | cut -f1)" -ge 67108864 ] || fail "the dataset is not 64 MiB"

# Each trial (each rank) writes one line: node, rank, the data directory's inode, whether every
# byte matches the source, and where the data lives.
cat > "$WORK/train-data.sh" <<'SH'
#!/bin/sh
manifest=$1
out=$DLX_EXPERIMENT_DIR/data-$DLX_TRIAL_ID-rank$RANK.txt
same=no
if (cd "$DLX_DATA_DIR" && sha256sum --quiet --strict -c "$manifest" > /dev/null 2>&1 &&
    [ "$(find . -type f | wc -l)" = "$(wc -l < "$manifest")" ]); then same=yes; fi
echo "node=$SLURMD_NODENAME rank=$RANK inode=$(stat -c %i "$DLX_DATA_DIR") same=$same dir=$DLX_DATA_DIR dirs=$DLX_DATA_DIRS tmpfs=${DLX_SLURM_TMPFS:-unset}" > "$out"
# Rank 0 of a multi-node trial: is the data complete on the other node already? (every node's
# directory is on this one host, so the marker of the same cache entry can be looked at)
if [ "$RANK" = 0 ] && [ -n "${PEER_NODE:-}" ]; then
  key=$(basename "$DLX_DATA_DIR")
  peer=${DLX_DATA_DIR%/*/*/*/*}/$PEER_NODE/dlx-$(id -u)/data
  if [ -f "$peer/$key.json" ] && [ -d "$peer/$key" ]; then echo "peer=ready" >> "$out"; else echo "peer=missing" >> "$out"; fi
fi
sleep "${HOLD:-3}"  # trials overlap: two stage on each node at once
SH
chmod a+rx "$WORK/train-data.sh"

write_exp() {  # write_exp FILE NAME TRIALS EXTRA_YAML...
  local file=$1 name=$2 trials=$3
  shift 3
  {
    echo "name: $name"
    echo "entrypoint: sh $WORK/train-data.sh $WORK/dataset.sha256"
    echo "hyperparameters: {x: {type: int, minval: 1, maxval: 1000}}"
    echo "searcher: {name: random, metric: loss, max_trials: $trials, max_concurrent_trials: 6}"
    echo "resources: {nodes_per_trial: 1, tasks_per_node: 1, cpus_per_task: 2}"
    printf '%s\n' "$@"
  } > "$WORK/$file"
  chmod a+r "$WORK/$file"
}
submit() {  # submit FILE [sbatch options]: prints the job id; the experiment dir in $WORK/FILE.dir
  local file=$1
  shift
  local submitted
  submitted=$(as_user sbatch --parsable --output="$WORK/ds-%A_%a.out" "$@" --dl-experiment="$file" examples/job.sh \
    2> "$WORK/$file.err") || fail "sbatch $file: $(cat "$WORK/$file.err")"
  grep -o "trials\? as array .* in /.*" "$WORK/$file.err" | sed 's/.* in //' > "$WORK/$file.dir"
  job_id_of "$submitted"
}
expect_refused() {  # expect_refused WHAT FILE EXPECTED...: sbatch fails at once, nothing queued or created
  local what=$1 file=$2
  shift 2
  local queued_before dirs_before message
  queued_before=$(squeue -h -u "$DLX_TEST_USER" | wc -l)
  dirs_before=$(count_entries "$(user_storage)")
  if as_user sbatch --parsable --dl-experiment="$file" examples/job.sh > "$WORK/refused.out" 2> "$WORK/refused.err"; then
    fail "$what: submitted: $(cat "$WORK/refused.out")"
  fi
  message=$(cat "$WORK/refused.err")
  for expected in "$@"; do expect_contains "$what" "$message" "$expected"; done
  [ "$(squeue -h -u "$DLX_TEST_USER" | wc -l)" = "$queued_before" ] || fail "$what: a job was queued"
  [ "$(count_entries "$(user_storage)")" = "$dirs_before" ] || fail "$what: an experiment directory was left"
  note "$what refused: $(grep 'data.stage' "$WORK/refused.err" | head -1)"
}

# ---- sbatch's checks: nothing queued, the path named ----
write_exp missing.yaml ds-missing 1 "data: {stage: [dataset, no-such-dir]}"
expect_refused "a missing path" missing.yaml \
  "dlx: --dl-experiment: missing.yaml: data.stage: $WORK/no-such-dir (written as no-such-dir): " \
  "relative paths are relative to the experiment file's directory" "(nothing was submitted)"
install -d -m 0700 "$WORK/root-only"
write_exp unreadable.yaml ds-unreadable 1 "data: {stage: [$WORK/root-only]}"
expect_refused "an unreadable path" unreadable.yaml "data.stage: $WORK/root-only: you cannot read it: Permission denied"
write_exp capped.yaml ds-capped 1 "data: {stage: [dataset], max_bytes: 10MB}"
expect_refused "over the cap" capped.yaml "data.stage: the datasets total 67.1 MB, above the node cache's cap of 10.0 MB" \
  "the biggest: $WORK/dataset (67.1 MB)"

# ---- a fresh start: no cache on any node ----
for n in n1 n2 n3; do rm -rf "$CLUSTER/tmp/$n/dlx-$uid" "$CLUSTER/tmp/$n/dlx-$(id -u "$ALICE")"; done

# ---- 6 trials on 3 nodes ----
write_exp stage6.yaml ds-six 6 "data: {stage: [dataset]}"
job=$(submit stage6.yaml)
expect_contains "sbatch's report" "$(cat "$WORK/stage6.yaml.err")" "dlx: data: 1 dataset (67.1 MB) to stage on each node"
wait_for_job "$job" 300
dir=$(cat "$WORK/stage6.yaml.dir")
grep -q "stage:.*\"$WORK/dataset\"" -A0 "$dir/experiment.yaml" || grep -q "\"$WORK/dataset\"" "$dir/experiment.yaml" ||
  fail "the frozen experiment.yaml does not name the absolute path: $(cat "$dir/experiment.yaml")"
declare -A inode_of
for t in 0 1 2 3 4 5; do
  f=$dir/data-$t-rank0.txt
  [ -f "$f" ] || fail "trial $t left no record: $(out_of "$job" | tail -20)"
  line=$(cat "$f")
  note "trial $t: $line"
  read -r node inode same data_dir <<< "$(sed -E 's/node=(\S+) rank=\S+ inode=(\S+) same=(\S+) dir=(\S+) .*/\1 \2 \3 \4/' "$f")"
  [ "$same" = yes ] || fail "trial $t read other bytes than the source: $line"
  case "$data_dir" in
    "$CLUSTER/tmp/$node/dlx-$uid/data/"*) ;;
    *) fail "trial $t's DLX_DATA_DIR is not in its node's local directory: $line" ;;
  esac
  case "$(readlink -f "$data_dir")" in "$(storage_root)"*|"$WORK"*) fail "trial $t reads shared storage: $line" ;; esac
  expect_contains "trial $t" "$line" "dirs=$data_dir"
  # Slurm's TmpFS reaches the trial (the cache's default below local_dir=), %n unexpanded.
  expect_contains "trial $t" "$line" "tmpfs=$CLUSTER/tmp/%n"
  if [ -n "${inode_of[$node]:-}" ] && [ "${inode_of[$node]}" != "$inode" ]; then
    fail "two copies on $node: inodes ${inode_of[$node]} and $inode"
  fi
  inode_of[$node]=$inode
done
[ "${#inode_of[@]}" = 3 ] || fail "the 6 trials ran on ${!inode_of[*]}, not on the 3 nodes"
copies=$(out_of "$job" | grep -c "dlx-launch: data on .*: copied " || true)
reuses=$(out_of "$job" | grep -c "dlx-launch: data on .*: reused " || true)
[ "$copies" = 3 ] && [ "$reuses" = 3 ] || fail "expected 3 copies and 3 reuses, got $copies and $reuses: $(out_of "$job" | grep 'data on')"
for n in n1 n2 n3; do
  [ "$(stat -c '%a %U' "$CLUSTER/tmp/$n/dlx-$uid")" = "700 $DLX_TEST_USER" ] ||
    fail "$n's cache is not the user's own 0700 directory: $(stat -c '%a %U' "$CLUSTER/tmp/$n/dlx-$uid")"
  [ "$(find "$(node_cache "$n" "$uid")" -mindepth 1 -maxdepth 1 -type d | wc -l)" = 1 ] ||
    fail "$n holds more than one entry: $(ls -la "$(node_cache "$n" "$uid")")"
done
note "6 trials on 3 nodes: one copy per node (inodes ${inode_of[*]}), byte-identical, node-local"

# ---- a second experiment reuses every node's copy ----
write_exp again.yaml ds-again 3 "data: {stage: [dataset]}"
job2=$(submit again.yaml)
wait_for_job "$job2" 300
dir2=$(cat "$WORK/again.yaml.dir")
for t in 0 1 2; do
  read -r node inode same <<< "$(sed -E 's/node=(\S+) rank=\S+ inode=(\S+) same=(\S+) .*/\1 \2 \3/' "$dir2/data-$t-rank0.txt")"
  [ "$same" = yes ] || fail "second experiment, trial $t: other bytes"
  [ "$inode" = "${inode_of[$node]}" ] || fail "second experiment, trial $t on $node: a new copy (inode $inode, not ${inode_of[$node]})"
done
if out_of "$job2" | grep -q "dlx-launch: data on .*: copied "; then fail "the second experiment copied: $(out_of "$job2" | grep 'data on')"; fi
note "a second experiment reused the cache: no copy, the same inodes"

# ---- a copy killed midway is redone, never used ----
cache=$(node_cache n1 "$uid")
key=$(basename "$(find "$cache" -mindepth 1 -maxdepth 1 -type d ! -name '.*')")
# What a copy killed before its marker leaves: the entry without its marker (and a truncated
# file in it), and an unfinished staging directory of a process that is gone.
as_user bash -c "rm '$cache/$key.json' && truncate -s 1000 '$cache/$key/shards/part-3.bin' &&
  mkdir '$cache/.staging-$key.$(hostname).999999' && echo partial > '$cache/.staging-$key.$(hostname).999999/x'"
write_exp redo.yaml ds-redo 1 "data: {stage: [dataset]}"
job3=$(submit redo.yaml -w n1)
wait_for_job "$job3" 300
line=$(cat "$(cat "$WORK/redo.yaml.dir")/data-0-rank0.txt")
expect_contains "after a killed copy" "$line" "node=n1 "
expect_contains "after a killed copy" "$line" "same=yes"
grep -q "dlx-launch: data on n1: .*: copied " <<< "$(out_of "$job3")" || fail "the unfinished entry was not copied again: $(out_of "$job3")"
[ -f "$cache/$key.json" ] || fail "the redone entry has no marker"
[ -z "$(find "$cache" -maxdepth 1 -name '.staging-*')" ] || fail "the unfinished copy was left: $(ls -a "$cache")"
note "a copy killed midway was redone: $line"

# ---- a second user: a cache of its own, and no look into the other's ----
auid=$(id -u "$ALICE")
awork=$DLX_TEST_STATE/work-$ALICE
rm -rf "$awork" && mkdir -p "$awork" && cp -r "$SOURCE_DIR/examples" "$awork/" && chown -R "$ALICE:" "$awork"
cat > "$awork/peek.sh" <<SH
#!/bin/sh
out=\$DLX_EXPERIMENT_DIR/peek.txt
echo "node=\$SLURMD_NODENAME dir=\$DLX_DATA_DIR" > "\$out"
if ls "$CLUSTER/tmp/\$SLURMD_NODENAME/dlx-$uid/data" > /dev/null 2>&1; then echo "other=visible" >> "\$out"; else echo "other=hidden" >> "\$out"; fi
(cd "\$DLX_DATA_DIR" && sha256sum --quiet --strict -c "$WORK/dataset.sha256" > /dev/null 2>&1) && echo "same=yes" >> "\$out"
SH
printf 'name: alice-data\nentrypoint: sh %s/peek.sh\nsearcher: {name: single, metric: loss}\nresources: {nodes_per_trial: 1, tasks_per_node: 1}\ndata: {stage: [%s/dataset]}\n' \
  "$awork" "$WORK" > "$awork/exp.yaml"
chown "$ALICE:" "$awork/exp.yaml" "$awork/peek.sh"
asub=$(runuser -u "$ALICE" -- env -i HOME="$awork" USER="$ALICE" PATH="$PREFIX/bin:/usr/bin:/bin" SLURM_CONF="$SLURM_CONF" \
  bash -c "cd '$awork' && sbatch --parsable -w n1 --output=$awork/alice-%A_%a.out --dl-experiment=exp.yaml examples/job.sh" 2> "$awork/sbatch.err") ||
  fail "alice's sbatch: $(cat "$awork/sbatch.err")"
ajob=$(job_id_of "$asub")
wait_for_job "$ajob" 300
adir=$(grep -o "in /.*" "$awork/sbatch.err" | tail -1 | sed 's/^in //')
peek=$(cat "$adir/peek.txt") || fail "alice's trial left no record: $(cat "$awork"/alice-"$ajob"_*.out)"
expect_contains "alice's trial" "$peek" "dir=$CLUSTER/tmp/n1/dlx-$auid/data/"
expect_contains "alice's trial" "$peek" "other=hidden"
expect_contains "alice's trial" "$peek" "same=yes"
grep -q "dlx-launch: data on n1: .*: copied " "$awork"/alice-"$ajob"_*.out || fail "alice reused another user's copy"
[ "$(stat -c '%a %U' "$CLUSTER/tmp/n1/dlx-$auid")" = "700 $ALICE" ] || fail "alice's cache is not hers alone"
if as_user ls "$CLUSTER/tmp/n1/dlx-$auid" > /dev/null 2>&1; then fail "$DLX_TEST_USER can list alice's cache"; fi
note "two users: separate 0700 caches, neither can look into the other's"

# ---- a 2-node trial: both nodes have the data before rank 0 starts ----
cat > "$WORK/multi.yaml" <<YAML
name: ds-multi
entrypoint: sh $WORK/train-data.sh $WORK/dataset2.sha256
searcher: {name: single, metric: loss}
resources: {nodes_per_trial: 2, tasks_per_node: 1}
environment: {PEER_NODE: n3, HOLD: "0"}
data: {stage: [dataset2]}
YAML
chmod a+r "$WORK/multi.yaml"
job4=$(submit multi.yaml -w n2,n3)
wait_for_job "$job4" 300
mdir=$(cat "$WORK/multi.yaml.dir")
r0=$(cat "$mdir/data-0-rank0.txt") || fail "rank 0 left no record: $(out_of "$job4")"
r1=$(cat "$mdir/data-0-rank1.txt") || fail "rank 1 left no record: $(out_of "$job4")"
expect_contains "rank 0" "$r0" "node=n2 "
expect_contains "rank 0" "$r0" "same=yes"
expect_contains "rank 0" "$r0" "peer=ready"
expect_contains "rank 1" "$r1" "node=n3 "
expect_contains "rank 1" "$r1" "same=yes"
[ "$(out_of "$job4" | grep -c 'dlx-launch: data on n[23]: .*: copied ')" = 2 ] ||
  fail "both nodes should have copied once: $(out_of "$job4" | grep 'data on')"
note "2-node trial: n3 had the data before rank 0 on n2 started"
