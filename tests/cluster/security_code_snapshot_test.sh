#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 31's attacks on the code snapshot, run for real by two users of one cluster: alice
# submits with sbatch --dl-experiment, mallory attacks.
#   3  mallory `git init`s a shared 1777 directory above alice's submit directory, with a
#      core.fsmonitor that leaves a marker: alice's sbatch succeeds with a warning and no
#      snapshot (it used to fail with git's "dubious ownership" and advice to trust the
#      directory); after alice trusts every directory (safe.directory=*) still nothing of
#      mallory's runs or is copied; alice's own repository there still snapshots;
#   6  alice's untracked 0600 credentials.env stays the owner's only (0400) in code/, and code.diff
#      is the owner's only with it;
#   8  a cloned repository's file name and link target with control characters: sbatch shows them
#      escaped (no retitled terminal, no forged "Submitted batch job" line).
source "$(dirname "$0")/lib.sh"
source "$SOURCE_DIR/tests/security/users.sh"

storage=$(storage_root)
shared=$DLX_TEST_STATE/shared-code
marker_dir=$DLX_TEST_STATE/code-markers
rm -rf "$shared" "$marker_dir" "${storage:?}/$ALICE/codesec"*
install -d -m 1777 "$shared" "$marker_dir"
work=$shared/alice-project
# alice's HOME (her ~/.gitconfig) is her own directory beside it.
home=$DLX_TEST_STATE/home-$ALICE
rm -rf "$home" && install -d -o "$ALICE" -m 0755 "$home"

as_alice() {  # as_alice CMD...: alice in her project directory, with the cluster's client environment
  runuser -u "$ALICE" -- env -i HOME="$home" USER="$ALICE" LOGNAME="$ALICE" PATH="$PREFIX/bin:/usr/bin:/bin" \
    SLURM_CONF="$SLURM_CONF" bash -c 'cd "$0" && "$@"' "$work" "$@"
}
as_mallory() {
  runuser -u "$MALLORY" -- env -i HOME=/ USER="$MALLORY" LOGNAME="$MALLORY" PATH=/usr/bin:/bin \
    bash -c 'cd "$0" && "$@"' "$shared" "$@"
}
git_as() {  # git_as USER ARGS...: git with an identity, as USER
  local who=$1
  shift
  "as_$who" git -c user.name=t -c user.email=t@example.org -c init.defaultBranch=main -c safe.directory='*' "$@"
}
submit() {  # submit NAME: alice submits (held) from her project; prints sbatch's stderr, sets $job and $dir
  printf 'name: %s\nentrypoint: sh train.sh\nsearcher: {name: single, metric: loss}\nresources: {nodes_per_trial: 1, tasks_per_node: 1}\n' \
    "$1" | as_alice tee "$work/$1.yaml" > /dev/null
  local submitted
  submitted=$(as_alice sbatch --parsable --hold --output=/dev/null --dl-experiment="$1.yaml" job.sh \
              2> "$DLX_TEST_STATE/$1.sbatch.err") || fail "alice's sbatch failed: $(cat "$DLX_TEST_STATE/$1.sbatch.err")"
  job=$(job_id_of "$submitted")
  scancel "$job"
  dir=$storage/$ALICE/$1
  [ -d "$dir" ] || fail "no experiment directory $dir: $(cat "$DLX_TEST_STATE/$1.sbatch.err")"
}
mallory_marker=$marker_dir/fsmonitor-ran-as

# ---- 3: mallory's repository above alice's directory.
printf '#!/bin/sh\nid -un >> %s\n' "$mallory_marker" | as_mallory tee "$shared/fsmonitor.sh" > /dev/null
as_mallory chmod 0755 "$shared/fsmonitor.sh"
git_as mallory init -q .
echo "print('mallory')" | as_mallory tee "$shared/mallory.py" > /dev/null
git_as mallory add mallory.py
git_as mallory commit -qm planted
git_as mallory config core.fsmonitor "$shared/fsmonitor.sh"  # set last: her own git would run it
install -d -o "$ALICE" -m 0755 "$work"
echo "print('alice')" | as_alice tee "$work/train.py" > /dev/null
as_alice cp /dev/stdin job.sh < "$SOURCE_DIR/examples/job.sh"

submit codesec-above
err=$(cat "$DLX_TEST_STATE/codesec-above.sbatch.err")
expect_contains "mallory's repository above alice's directory" "$err" \
  "dlx: no code snapshot: $work is inside a git repository that is not yours ($shared/.git belongs to $MALLORY)"
expect_contains "mallory's repository above alice's directory" "$err" "do not trust it with safe.directory"
case $err in *"git config --global --add safe.directory"*) fail "sbatch relayed git's advice to trust mallory's directory: $err" ;; esac
[ ! -e "$dir/code" ] || fail "a snapshot was taken from mallory's repository: $(ls "$dir/code")"
[ ! -e "$mallory_marker" ] || fail "mallory's fsmonitor ran as $(cat "$mallory_marker")"
note "mallory's repository above: $(grep 'no code snapshot' <<< "$err")"

# alice trusts every directory, as git's old advice led her to: still nothing of mallory's.
printf '[safe]\n\tdirectory = *\n' | as_alice tee "$home/.gitconfig" > /dev/null
submit codesec-trusted
err=$(cat "$DLX_TEST_STATE/codesec-trusted.sbatch.err")
expect_contains "mallory's repository, safe.directory=*" "$err" "is inside a git repository that is not yours"
[ ! -e "$dir/code" ] || fail "safe.directory=*: a snapshot was taken from mallory's repository"
[ ! -e "$mallory_marker" ] || fail "safe.directory=*: mallory's fsmonitor ran as $(cat "$mallory_marker")"
note "with safe.directory=*: no snapshot, mallory's fsmonitor never ran"

# ---- alice's own repository in the same place: snapshotted, her files only. With an untracked
# 0600 credentials.env (6), and a cloned file name and link target with control characters (8):
# an OSC title sequence, and a newline that would forge sbatch's own line.
git_as alice init -q .
printf 'echo alice\n' | as_alice tee "$work/train.sh" > /dev/null
git_as alice add train.py train.sh job.sh
git_as alice commit -qm mine
echo "print('alice, edited')" | as_alice tee "$work/train.py" > /dev/null
as_alice bash -c 'umask 077 && echo "TOKEN=alice-secret" > credentials.env'
as_alice ln -s $'/nowhere\nSubmitted batch job 999999' $'\e]0;owned\a-link'
as_alice touch $'title-\e]0;owned\a.py'
submit codesec-own
err=$(cat "$DLX_TEST_STATE/codesec-own.sbatch.err")
expect_contains "alice's own repository" "$err" "dlx: code snapshot: "
expect_contains "alice's own repository" "$err" "from $work (commit "
[ -f "$dir/code/train.py" ] || fail "alice's own repository was not snapshotted: $err"
[ ! -e "$dir/code/mallory.py" ] || fail "mallory's file entered alice's snapshot"
[ ! -e "$mallory_marker" ] || fail "mallory's fsmonitor ran as $(cat "$mallory_marker")"
note "alice's own repository: $(grep 'code snapshot:' <<< "$err" | head -1)"

# 6: modes never wider than the source.
[ "$(stat -c %a "$dir/code/credentials.env")" = 400 ] ||
  fail "credentials.env (0600 at its source) is $(stat -c %a "$dir/code/credentials.env") in code/"
[ "$(stat -c %a "$dir/code/train.py")" = 440 ] || fail "train.py: $(stat -c %a "$dir/code/train.py")"
[ "$(stat -c %a "$dir/code.diff")" = 400 ] || fail "code.diff: $(stat -c %a "$dir/code.diff") (the snapshot holds an owner-only file)"
if runuser -u "$MALLORY" -- cat "$dir/code/credentials.env" > /dev/null 2>&1; then
  fail "mallory (alice's group) reads alice's credentials.env in the snapshot"
fi
note "credentials.env: 0400 in code/, code.diff 0400; mallory, in alice's group, cannot read it"

# 8: sbatch's lines show the control characters escaped.
case $err in *$'\e'*|*$'\a'*) fail "sbatch printed raw control characters: $(printf '%q' "$err")" ;; esac
grep -qx 'Submitted batch job 999999' <<< "$err" && fail "a link target forged sbatch's line: $err"
expect_contains "the skipped link, escaped" "$err" '\x1b]0;owned\x07-link: symbolic link to /nowhere\nSubmitted batch job 999999'
[ -f "$dir/code/title-"$'\e]0;owned\a.py' ] || fail "the file with control characters in its name was not copied"
note "control characters escaped: $(grep 'not copied' <<< "$err")"
rm -rf "$shared" "$marker_dir" "$home"
