#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Trials in container images (docs/containers.md), as the unprivileged test user, on an image this
# test builds offline from Debian's packages (tests/container/make_image.py: PyTorch, h5py and
# what libdlx_c links; no dlx, no registry), with the crun back end (an OCI runtime: crun, else
# runc) and with Podman:
#   0. `dlx doctor --containers` starts a Podman container as trials do: refused on crun where the
#      host's cgroups are a v1/v2 hybrid (the warning names the containers.conf fix), then ok on runc;
#   1. a probe trial in each: the working directory is the code copy, the staged data and a
#      read-only bind mount are there at their paths (another, read-only, above the experiment
#      directory leaves that one writable), `import dlx` finds the SDK mounted at
#      /dlx, a checkpoint round trip, the host's LD_LIBRARY_PATH kept out, HOME kept, `dlx logs` has it all;
#   2. the PyTorch DDP example (2 nodes x 1 rank) in the image under each runtime, `scontrol
#      requeue`d mid-run: resumed, recorded as a requeue (SIGTERM, whichever rank the runtime's
#      signal proxy reached first), and its final tensors identical to a bare, uninterrupted run;
#   3. bad input: a missing image and an entrypoint the image lacks (refused at sbatch), a runtime
#      that is not installed (the trial fails, its log and `dlx status` say why);
#   4. the image cache: an OCI layout of two layers (a whiteout in the second) run by two
#      experiments of three trials on the three nodes: converted once, copied once per node,
#      the digest in `dlx status`; and an OCI image whose config names USER 1000:1000, under
#      podman: the trainer runs as the user (root of its namespace) and the file it writes is theirs,
#      and a program it lacks fails the trial at once (sbatch cannot check a registry image);
#   5. ASHA over the ResNet example in the image: rung pauses resumed from their checkpoints.
# DLX_TEST_CONTAINER_RUNTIMES names the runtimes of 1. and 2. (default: crun podman).
# scripts/container-check.sh adds the real Apptainer and Enroot, which are not in CI
# (DLX_TEST_APPTAINER, DLX_TEST_ENROOT: their programs); Apptainer then also runs an OCI layout
# itself (6.), and Enroot a squashfs of the image (and, after a new version of it, removes the old
# version's container).
source "$(dirname "$0")/resume_lib.sh"

read -ra RUNTIMES <<< "${DLX_TEST_CONTAINER_RUNTIMES:-crun podman}"
testing() { case " ${RUNTIMES[*]} " in *" $1 "*) return 0 ;; esac; return 1; }
# Apptainer's and Enroot's programs are put on the trials' PATH for this test only: other tests'
# `auto` must not find them.
linked=()
remove_links() { if [ "${#linked[@]}" -gt 0 ]; then rm -f "${linked[@]}"; fi; }
trap remove_links EXIT
for extra in apptainer:DLX_TEST_APPTAINER enroot:DLX_TEST_ENROOT; do
  runtime=${extra%%:*} variable=${extra#*:}
  testing "$runtime" || continue
  [ -x "${!variable:-}" ] || fail "DLX_TEST_CONTAINER_RUNTIMES has $runtime: $variable must name its program (scripts/container-check.sh)"
  # Enroot's helpers (enroot-nsenter, enroot-switchroot, ...) are found on PATH beside it.
  for program in "${!variable}" $([ "$runtime" = enroot ] && ls "$(dirname "${!variable}")"/enroot-*); do
    ln -sfn "$program" "$PREFIX/bin/$(basename "$program")"
    linked+=("$PREFIX/bin/$(basename "$program")")
  done
done

command -v podman > /dev/null || fail "podman is not installed (scripts/install-deps.sh)"
command -v runc > /dev/null || command -v crun > /dev/null || fail "neither crun nor runc is installed"

# The image, once per state directory (root's, read-only to the user: shared like a site's).
IMAGE=$DLX_TEST_STATE/images/torch
if [ ! -e "$IMAGE/.complete" ]; then
  rm -rf "$IMAGE"
  /usr/bin/python3 "$SOURCE_DIR/tests/container/make_image.py" "$IMAGE" \
    --library "$PREFIX/lib/$(ls "$PREFIX/lib" | grep -m1 -- -linux-gnu || true)/libdlx_c.so.0" \
    python3-torch python3-h5py python3-numpy dash coreutils
  touch "$IMAGE/.complete"
fi
chmod 0755 "$DLX_TEST_STATE/images" "$IMAGE"
[ -x "$IMAGE/usr/bin/python3" ] || fail "the image has no python3"
# Enroot runs squashfs files: the same image as one.
SQUASHFS=$DLX_TEST_STATE/images/torch.sqsh
if testing enroot && [ ! -e "$SQUASHFS" ]; then
  mksquashfs "$IMAGE" "$SQUASHFS.partial" -noappend -quiet -comp lz4 -e .complete > /dev/null
  mv "$SQUASHFS.partial" "$SQUASHFS"
  chmod 0644 "$SQUASHFS"
fi
image_of() { if [ "$1" = enroot ]; then echo "$SQUASHFS"; else echo "$IMAGE"; fi; }
kind_of() { if [ "$1" = enroot ]; then echo "a squashfs image"; else echo "a root file system directory"; fi; }
# Podman as the user: runc (the host's cgroup v1 + v2 hybrid is refused by crun in rootless
# mode), cgroupfs, storage under the user's home (HOME=$WORK).
mkdir -p "$WORK/.config/containers"
printf '[storage]\ndriver = "vfs"\n' > "$WORK/.config/containers/storage.conf"
# dlx doctor starts a container as trials do: on a hybrid host, Podman on crun is refused, and the
# warning names the setting below; with it, Podman starts containers.
hybrid_crun=false
if [ "$(stat -fc %T /sys/fs/cgroup)" = tmpfs ] && [ "$(stat -fc %T /sys/fs/cgroup/unified 2> /dev/null)" = cgroup2fs ] &&
   command -v crun > /dev/null; then
  hybrid_crun=true
  printf '[engine]\nruntime = "crun"\nevents_logger = "file"\n' > "$WORK/.config/containers/containers.conf"
  chown -R "$DLX_TEST_USER" "$WORK/.config"
  as_user dlx doctor --containers > "$WORK/doctor-crun.out" 2>&1 || true
  expect_contains "dlx doctor --containers, Podman on crun, hybrid cgroups" "$(cat "$WORK/doctor-crun.out")" \
    "installed, but podman cannot start a container here (exit 126): Error: OCI runtime error: crun: cgroups in hybrid mode not supported"
  expect_contains "dlx doctor --containers, Podman on crun, hybrid cgroups" "$(cat "$WORK/doctor-crun.out")" \
    "set runtime = \"runc\" and cgroup_manager = \"cgroupfs\" under [engine] in /etc/containers/containers.conf"
  note "dlx doctor: Podman on crun refused on this hybrid host, with the fix"
fi
printf '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n' \
  > "$WORK/.config/containers/containers.conf"
chown -R "$DLX_TEST_USER" "$WORK/.config"
as_user dlx doctor --containers > "$WORK/doctor-runc.out" 2>&1 || true
grep -Eq "^ok +container runtime podman +starts containers here$" "$WORK/doctor-runc.out" ||
  fail "dlx doctor --containers did not start a Podman container on runc: $(cat "$WORK/doctor-runc.out")"

test_jobs=()  # every job of this test: none may leave a container's state on a node (the end)

# ---- 1. the probe ------------------------------------------------------------------------------
mkdir -p "$WORK/probe-code" "$WORK/probe-data" "$WORK/ro-data"
cp "$SOURCE_DIR/tests/container/probe.py" "$WORK/probe-code/"
echo "1 2 3" > "$WORK/probe-data/numbers.txt"
echo "hello from the host" > "$WORK/ro-data/hello.txt"
chown -R "$DLX_TEST_USER" "$WORK/probe-code" "$WORK/probe-data" "$WORK/ro-data"
cat > "$WORK/probe.sh" <<'SH'
#!/bin/bash
export LD_LIBRARY_PATH=/host/only/lib
srun dlx-launch
SH
chmod a+rx "$WORK/probe.sh"
write_probe() {  # write_probe NAME RUNTIME [IMAGE] [ENTRYPOINT]
  cat > "$WORK/$1.yaml" <<YAML
name: $1
entrypoint: ${4:-[/usr/bin/python3, probe.py]}
searcher: {name: single, metric: loss, max_length: {batches: 1}}
code: {dir: $WORK/probe-code}
data: {stage: [$WORK/probe-data]}
container:
  runtime: $2
  image: ${3:-$IMAGE}
  bind_mounts:
    - {host_path: $WORK/ro-data, container_path: /ro-data, read_only: true}
    # read-only above the experiment's directory: the trial must still write its checkpoints
    - {host_path: $(user_storage), read_only: true}
YAML
  chmod a+r "$WORK/$1.yaml"
}
probe_value() { grep -m1 "^probe: $2=" "$1" | cut -d= -f2-; }
for runtime in "${RUNTIMES[@]}"; do
  write_probe "probe-$runtime" "$runtime" "$(image_of "$runtime")"
  job=$(job_id_of "$(as_user sbatch --parsable --output="probe-$runtime-%A_%a.out" --dl-experiment="probe-$runtime.yaml" probe.sh)")
  test_jobs+=("$job")
  wait_for_job "$job" 120
  out=$WORK/probe-$runtime-${job}_0.out
  grep -q "^probe: done" "$out" || fail "the probe in $runtime did not finish: $(tail -n 30 "$out")"
  expect_contains "the launch line ($runtime)" "$(cat "$out")" "runs in the container image $(image_of "$runtime") ($(kind_of "$runtime")) with $runtime"
  expect_contains "the SDK line ($runtime)" "$(cat "$out")" \
    "dlx-launch: the dlx SDK in the container: /dlx/python and /dlx/lib/libdlx_c.so.0 (dlx's own libdlx_c $PREFIX/"
  cwd=$(probe_value "$out" cwd)
  case "$cwd" in *"/code-"*) ;; *) fail "$runtime: the trainer's working directory $cwd is not the code copy" ;; esac
  [ "$(probe_value "$out" code_copy_has_probe)" = True ] || fail "$runtime: probe.py is not in the working directory"
  [ "$(probe_value "$out" data_file)" = "1 2 3" ] || fail "$runtime: the staged data is not visible: $(probe_value "$out" data_file)"
  expect_contains "$runtime: the bind mount" "$(probe_value "$out" bind_mount)" "read-only"
  [ "$(probe_value "$out" bind_mount_file)" = "hello from the host" ] || fail "$runtime: the bind mount's file is not there"
  [ "$(probe_value "$out" dlx_package)" = /dlx/python/dlx ] || fail "$runtime: dlx came from $(probe_value "$out" dlx_package), not /dlx"
  [ "$(probe_value "$out" ld_library_path)" = unset ] || fail "$runtime: the host's LD_LIBRARY_PATH reached the image"
  [ "$(probe_value "$out" home)" = "$WORK" ] || fail "$runtime: HOME is $(probe_value "$out" home), not the user's $WORK"
  [ "$(probe_value "$out" checkpoint_round_trip)" = True ] || fail "$runtime: the checkpoint round trip failed"
  [ -e "$WORK/ro-data/written" ] && fail "$runtime: the trainer wrote through a read-only bind mount"
  expect_contains "dlx logs ($runtime)" "$(as_user dlx logs "$job" 0 2>&1)" "probe: done"
  status=$(as_user dlx status "$job")
  expect_contains "dlx status ($runtime)" "$status" "# 1 trial: 1 completed"
  expect_contains "dlx status ($runtime)" "$status" "# image $(image_of "$runtime") with $runtime"
  note "$runtime: the probe saw its code copy, data, bind mount (read-only) and dlx; checkpoint round trip; dlx logs"
done

# ---- 3. bad input -------------------------------------------------------------------------------
# A missing image and an image without the entrypoint's program: refused at sbatch, nothing queued.
bare=$DLX_TEST_STATE/images/shell-only
if [ ! -e "$bare/.complete" ]; then
  rm -rf "$bare"
  /usr/bin/python3 "$SOURCE_DIR/tests/container/make_image.py" "$bare" dash coreutils > /dev/null
  touch "$bare/.complete"
fi
chmod 0755 "$bare"
refused() {  # refused NAME EXPECTED: sbatch of NAME.yaml fails with EXPECTED, no experiment made
  local err
  if err=$(as_user sbatch --parsable --dl-experiment="$1.yaml" probe.sh 2>&1); then fail "sbatch accepted $1: $err"; fi
  expect_contains "sbatch of $1" "$err" "$2"
  expect_contains "sbatch of $1" "$err" "nothing was submitted"
  [ ! -e "$(user_storage)/$1" ] || fail "a refused $1 left its experiment directory"
}
write_probe bad-missing crun "$WORK/no-such-image"
refused bad-missing "container.image: $WORK/no-such-image does not exist"
write_probe bad-no-python crun "$bare"
refused bad-no-python "container.image: the image $bare has no /usr/bin/python3 to run the entrypoint with"
# A runtime the node does not have: known on the node only; the trial fails at once and says so.
missing=enroot
testing enroot && missing=apptainer
if testing "$missing"; then
  note "not run: a runtime the node lacks (every one is under test here; CI runs it)"
else
  command -v "$missing" > /dev/null && fail "this test expects $missing not to be installed"
  write_probe bad-runtime "$missing" "$DLX_TEST_STATE/images/shell-only/../torch"
  job=$(job_id_of "$(as_user sbatch --parsable --output="bad-runtime-%A_%a.out" --dl-experiment=bad-runtime.yaml probe.sh)")
  test_jobs+=("$job")
  wait_for_job "$job" 120
  expect_contains "the trial log of bad-runtime" "$(cat "$WORK/bad-runtime-${job}_0.out")" \
    "the site's container runtime $missing cannot run here: $missing is not installed"
  status=$(as_user dlx status "$job")
  expect_contains "dlx status of bad-runtime" "$status" "# 1 trial: 1 failed"
  # The trial's own log ends with it too (dlx-launch's last line, printed after the copy stopped).
  logs=$(as_user dlx logs "$job" 0 2>&1)
  expect_contains "dlx logs of bad-runtime" "$logs" "dlx-launch: cannot run the trainer in its container on n"
  expect_contains "dlx logs of bad-runtime" "$logs" "the site's container runtime $missing cannot run here"
  note "a runtime the node lacks ($missing) fails the trial with why, in Slurm's output and in dlx logs"
fi
# A runtime that cannot start a container on the node (Podman on crun, this hybrid host): the
# trial fails at once with Podman's words and where to look, not after three restarts as the
# same crash of a trainer that never ran.
if $hybrid_crun && testing podman; then
  printf '[engine]\nruntime = "crun"\nevents_logger = "file"\n' > "$WORK/.config/containers/containers.conf"
  write_probe hybrid-crun podman
  job=$(job_id_of "$(as_user sbatch --parsable --output="hybrid-crun-%A_%a.out" --dl-experiment=hybrid-crun.yaml probe.sh)")
  test_jobs+=("$job")
  wait_for_job "$job" 120
  printf '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n' \
    > "$WORK/.config/containers/containers.conf"
  out=$(cat "$WORK/hybrid-crun-${job}_0.out")
  expect_contains "hybrid-crun's job output" "$out" "podman could not start the trainer's container on n"
  expect_contains "hybrid-crun's job output" "$out" \
    "(exit 126): Error: OCI runtime error: crun: cgroups in hybrid mode not supported"
  expect_contains "hybrid-crun's job output" "$out" "dlx doctor --containers"
  expect_contains "hybrid-crun's job output" "$out" "a restart would fail alike, so it is not restarted"
  expect_contains "dlx status of hybrid-crun" "$(as_user dlx status "$job")" "# 1 trial: 1 failed"
  [ ! -e "$(trial_dir "$job")/logs/attempt-1.rank-0.log" ] ||
    fail "hybrid-crun was started again after Podman could not start its container: $out"
  note "podman that cannot start a container on the node fails the trial at once, with its words and dlx doctor"
fi
note "refused at sbatch: a missing image, an image without python3"

# ---- 4. the image cache ------------------------------------------------------------------------
# An OCI layout (the shell-only image, and a second layer that adds a file and whiteouts one),
# run by crun: two experiments of three trials each on the cluster's three nodes convert it once
# (the three first trials start together: one converts, the others wait for it and use it), and
# copy it once to each node.
layer2=$WORK/layer2
mkdir -p "$layer2/etc" "$layer2/usr/share/doc"
echo "from the second layer" > "$layer2/etc/dlx-layer2"
touch "$layer2/usr/share/doc/.wh.coreutils"
layout=$WORK/shell-layout
digest=$(/usr/bin/python3 "$SOURCE_DIR/tests/container/make_oci_layout.py" "$layout" --layer "$bare" --layer "$layer2")
chmod -R a+rX "$layout"
cat > "$WORK/cached.sh" <<'SH'
#!/bin/bash
srun dlx-launch
SH
chmod a+rx "$WORK/cached.sh"
# run_trial NAME LIMIT: NAME.yaml's one trial through cached.sh, waited for up to LIMIT seconds;
# sets job and out (its Slurm output).
run_trial() {
  chmod a+r "$WORK/$1.yaml"
  job=$(job_id_of "$(as_user sbatch --parsable --output="$1-%A_%a.out" --dl-experiment="$1.yaml" cached.sh)")
  test_jobs+=("$job")
  wait_for_job "$job" "$2"
  out=$(cat "$WORK/$1-${job}_0.out")
}
for name in cached-a cached-b; do
  cat > "$WORK/$name.yaml" <<YAML
name: $name
entrypoint: "cat /etc/dlx-layer2; test ! -e /usr/share/doc/coreutils && echo whiteout-applied"
hyperparameters: {k: {type: categorical, vals: [1, 2, 3]}}
searcher: {name: grid, metric: loss, max_length: {batches: 1}}
resources: {partition: low, cpus_per_task: 4}  # a node each: three nodes at once
container: {runtime: crun, image: "oci:$layout"}
YAML
  chmod a+r "$WORK/$name.yaml"
done
cache_jobs=()
for name in cached-a cached-b; do
  cache_jobs+=("$(job_id_of "$(as_user sbatch --parsable --output="$name-%A_%a.out" --dl-experiment="$name.yaml" cached.sh)")")
  wait_for_job "${cache_jobs[-1]}" 240  # the second experiment after the first: it finds the cache
done
outs=$(cat "$WORK"/cached-a-"${cache_jobs[0]}"_*.out "$WORK"/cached-b-"${cache_jobs[1]}"_*.out)
[ "$(grep -c "from the second layer" <<< "$outs")" = 6 ] || fail "not every trial ran in the image: $outs"
[ "$(grep -c "whiteout-applied" <<< "$outs")" = 6 ] || fail "the second layer's whiteout was not applied: $outs"
conversions=$(grep -c "converted once" <<< "$outs" || true)
[ "$conversions" = 1 ] || fail "the image was converted $conversions times, not once: $(grep "converted once" <<< "$outs")"
copies=$(grep "(the image $digest)" <<< "$outs" | grep -c ": copied " || true)
nodes=$(grep "(the image $digest)" <<< "$outs" | sed 's/.*data on \([^:]*\):.*/\1/' | sort -u | wc -l)
[ "$copies" = "$nodes" ] || fail "$copies copies of the image for $nodes nodes: $(grep "(the image" <<< "$outs")"
[ -d "$(user_storage)/.images/${digest#sha256:}/rootfs" ] || fail "no cache entry for $digest: $(ls -la "$(user_storage)/.images")"
if ls "$(user_storage)/.images" | grep -q partial; then fail "a partial conversion was left: $(ls "$(user_storage)/.images")"; fi
expect_contains "dlx status of cached-b" "$(as_user dlx status "${cache_jobs[1]}")" "# image oci:$layout ($digest) with crun"
report=$(as_user dlx report "${cache_jobs[1]}" --output "$WORK/cached-b.html" 2>&1) || fail "dlx report failed: $report"
grep -q "$digest" "$WORK/cached-b.html" || fail "the report does not name the image's digest"
note "two experiments, six trials on $nodes nodes: one conversion of $digest, one copy per node"

# An image whose config names another USER, as many published images do, run by podman from its
# own storage (a registry reference: the one form whose config podman reads itself; dlx converts
# layouts and archives to a root file system). Podman runs the trainer as root of its user
# namespace (the user outside), as the other runtimes run it as the user: the image's uid 1000 is
# not mapped here ("unable to setup user", exit 126, requeued as a crash) and would not own what it
# wrote. The image is pulled from a layout into the user's storage and tagged, as `podman pull` of
# a registry would leave it.
if testing podman; then
  user_layout=$WORK/user-layout
  /usr/bin/python3 "$SOURCE_DIR/tests/container/make_oci_layout.py" "$user_layout" --layer "$bare" --user 1000:1000 > /dev/null
  chmod -R a+rX "$user_layout"
  image_id=$(as_user podman pull -q "oci:$user_layout") || fail "podman could not pull oci:$user_layout: $image_id"
  as_user podman tag "$image_id" localhost/dlx-image-user:1 || fail "podman could not tag $image_id"
  cat > "$WORK/image-user.yaml" <<YAML
name: image-user
entrypoint: "echo uid-inside=\$(id -u); echo written-inside > mine.txt"
searcher: {name: single, metric: loss, max_length: {batches: 1}}
code: {dir: $WORK/probe-code}
container: {runtime: podman, image: "localhost/dlx-image-user:1"}
YAML
  run_trial image-user 180
  expect_contains "the trial in an image with USER 1000" "$out" "uid-inside=0"
  expect_contains "the trial in an image with USER 1000" "$out" "dlx-launch: kept 1 file (15 B) the trainer wrote"
  kept=$(user_storage)/image-user/trials/0/outputs/mine.txt
  [ "$(stat -c %U "$kept" 2>&1)" = "$DLX_TEST_USER" ] || fail "the trainer's file is not the user's: $(ls -ln "$kept" 2>&1); $out"
  [ "$(cat "$kept")" = written-inside ] || fail "the kept file holds $(cat "$kept")"
  note "podman: an image with USER 1000:1000 ran as the user (root of its namespace); its file is the user's"

  # An entrypoint the image lacks: sbatch cannot look into an image the node pulls, and podman
  # says "OCI runtime attempted to invoke a command that was not found" (exit 127). A restart
  # would fail alike: the trial fails at once, not after three waits in the queue.
  sed -e 's/^name: image-user/name: image-typo/' -e 's/^entrypoint: .*/entrypoint: [pyhton3, train.py]/' \
    "$WORK/image-user.yaml" > "$WORK/image-typo.yaml"
  run_trial image-typo 180
  expect_contains "a missing program in a registry image" "$out" \
    "cannot run the trainer's program 'pyhton3' on n"
  expect_contains "a missing program in a registry image" "$out" \
    "or make the program exist and be executable in the image localhost/dlx-image-user:1; a restart would fail alike, so it is not restarted"
  status=$(as_user dlx status "$job")
  expect_contains "dlx status of image-typo" "$status" "# 1 trial: 1 failed"
  expect_contains "dlx status of image-typo" "$status" "OCI runtime attempted to invoke a command that was not found"
  grep -q "attempt 1" <<< "$out" && fail "the trial with a missing program was restarted: $out"
  note "podman: a program the registry image lacks failed the trial at once, with podman's words"
fi

# ---- 2. the DDP example in the image, requeued: identical to a bare, uninterrupted run ----------
# The hyperparameters of pytorch_resume_test.sh, so that its reference run (bare) serves here.
RESUME_ENTRYPOINT="[/usr/bin/python3, examples/pytorch/ddp.py]"
RESUME_HPARAMS="{learning_rate: 0.01, batch_size: 16, epochs: 4, hidden: 32, dropout: 0.1, seed: 7, step_delay_ms: 150}"
RESUME_CHECKPOINT="{period: {batches: 40}, keep_latest: 2}"
jobs_started=()
trap 'scancel "${jobs_started[@]}" 2> /dev/null || true; remove_links' EXIT
write_resume_experiment torch-bare
start_reference_trial torch-bare
declare -A ddp_job ddp_dir
for runtime in "${RUNTIMES[@]}"; do
  write_resume_experiment "torch-$runtime" "container: {runtime: $runtime, image: $(image_of "$runtime")}"
  ddp_job[$runtime]=$(submit_trial "torch-$runtime")
  test_jobs+=("${ddp_job[$runtime]}")
  jobs_started+=("${ddp_job[$runtime]}")
done
# Each requeued as soon as it has a checkpoint past step 80, whichever comes first: with four
# runtimes on three nodes some start late, and one waited for in turn (its job link, which comes
# when it starts, or its checkpoint) would let the others finish unrequeued.
unrequeued=("${RUNTIMES[@]}")
deadline=$((SECONDS + 300))
while [ "${#unrequeued[@]}" -gt 0 ]; do
  still=()
  for runtime in "${unrequeued[@]}"; do
    if [ -z "${ddp_dir[$runtime]:-}" ] && [ -L "$(user_storage)/.jobs/${ddp_job[$runtime]}" ]; then
      ddp_dir[$runtime]=$(trial_dir "${ddp_job[$runtime]}")
    fi
    if [ -n "${ddp_dir[$runtime]:-}" ] && checkpoint_past "${ddp_dir[$runtime]}" 80; then
      job_running "${ddp_job[$runtime]}" || fail "torch-$runtime finished before the requeue"
      scontrol requeue "${ddp_job[$runtime]}_0"
      note "scontrol requeue of torch-$runtime (${ddp_job[$runtime]}_0)"
    else
      still+=("$runtime")
    fi
  done
  unrequeued=(${still[@]+"${still[@]}"})
  [ "${#unrequeued[@]}" -eq 0 ] || [ "$SECONDS" -lt "$deadline" ] ||
    fail "no checkpoint past step 80 after 300 s: torch-${unrequeued[*]}"
  sleep 0.25
done
for runtime in "${RUNTIMES[@]}"; do
  job=${ddp_job[$runtime]}
  wait_for_job "$job" 600
  out=$WORK/torch-$runtime-${job}_0.out
  expect_contains "torch-$runtime's launch" "$(cat "$out")" "runs in the container image $(image_of "$runtime")"
  finish_reference_trial
  /usr/bin/python3 "$SOURCE_DIR/tests/tools/compare_checkpoints.py" "$REFERENCE" "${ddp_dir[$runtime]}" \
    --tensor model/0.weight --tensor model/1.running_mean --tensor optimizer/state/0/exp_avg \
    --tensor rng/rank-1/torch --causes requeue --crashes 0 ||
    fail "torch-$runtime is not identical to the bare uninterrupted run: $(tail -n 30 "$out")"
  expect_contains "dlx status of torch-$runtime" "$(as_user dlx status "$job")" "# 1 trial: 1 completed"
  note "torch-$runtime: requeued in its container, resumed, identical to the bare run"
done

# ---- 2b. Podman: a requeue's SIGTERM reaches a trainer that saves for 1 s, whose exit counts --------
# `podman run` exits 0 at once on a SIGTERM it passes on, and its signal proxy's helper can itself
# be killed by Slurm's signal to the whole step: dlx-launch passes the notice with `podman kill`
# too, waits for the container (`podman wait`) and takes its trainer's exit (85), and leaves no
# container behind. The entrypoint is a string of one command (run as exec of it). The save takes
# 1 s: longer than `podman run` takes to return, and short enough that on a loaded machine the
# notice's way in (Slurm, dlx-launch, `podman kill`) and the container's way out fit in this
# cluster's KillWait of 5 s (3 s did not, once, on a machine twice as slow as usual).
if testing podman; then
  cat > "$WORK/slow-save.py" <<'PY'
import os, signal, sys, time
if os.environ.get("SLURM_RESTART_COUNT"):
    sys.exit(0)  # the requeued run: nothing left to do
def save(*_):
    time.sleep(1)
    print("trainer: saved after SIGTERM", flush=True)
    sys.exit(85)
signal.signal(signal.SIGTERM, save)
open(os.path.join(sys.argv[1], "slow-save.started"), "w").close()
while True:
    time.sleep(0.1)
PY
  cat > "$WORK/slow-save.yaml" <<YAML
name: slow-save
entrypoint: /usr/bin/python3 slow-save.py slow-save-out
searcher: {name: single, metric: loss, max_length: {batches: 1}}
container: {runtime: podman, image: $IMAGE}
YAML
  as_user mkdir -p slow-save-out
  chmod a+r "$WORK/slow-save.py" "$WORK/slow-save.yaml"
  printf '#!/bin/bash\nsrun dlx-launch\n' > "$WORK/slow-save.sh"
  chmod a+rx "$WORK/slow-save.sh"
  slow=$(submit_trial slow-save)
  jobs_started+=("$slow")
  wait_until 120 "the slow-save trainer" test -e "$WORK/slow-save-out/slow-save.started"
  scontrol requeue "${slow}_0"
  wait_for_job "$slow" 300
  slow_log=$(cat "$(trial_dir "$slow")/logs/attempt-0.rank-0.log")
  expect_contains "slow-save's first run" "$slow_log" "trainer: saved after SIGTERM"
  expect_contains "slow-save's job output" "$(cat "$WORK/slow-save-${slow}_0.out")" "task 0: Exited with exit code 85"
  left=$(as_user podman ps -a --format '{{.Names}}' 2> /dev/null | grep "^dlx-${slow}_" || true)
  [ -z "$left" ] || fail "containers of slow-save are left after its job: $left"
  note "podman: the requeue's SIGTERM reached a one-command trainer, its 1 s save finished, exit 85 counted, no container left"
fi

# ---- 5. ASHA over the ResNet example in the image -------------------------------------------------
# Trials pause at a rung with a checkpoint and later array tasks resume them from it, all inside
# the container (crun); none fails.
sed -e 's/^name: resnet-asha/name: resnet-asha-container/' "$WORK/examples/pytorch/resnet_asha.yaml" > "$WORK/resnet-asha-container.yaml"
echo "container: {runtime: crun, image: $IMAGE}" >> "$WORK/resnet-asha-container.yaml"
chmod a+r "$WORK/resnet-asha-container.yaml"
asha=$(job_id_of "$(as_user sbatch --parsable --output="resnet-asha-container-%A_%a.out" \
  --dl-experiment=resnet-asha-container.yaml examples/pytorch/job.sh)")
jobs_started+=("$asha")
wait_for_job "$asha" 600
all=$(cat "$WORK"/resnet-asha-container-"$asha"_*.out)
grep -q "Traceback" <<< "$all" && fail "an ASHA trial failed in its container: $(grep -A8 Traceback <<< "$all" | head -30)"
[ "$(grep -c "runs in the container image $IMAGE" <<< "$all")" -ge 6 ] || fail "not every ASHA task ran in the image"
grep -Eq "dlx: resuming from .*/checkpoints/step-(24|48)\.h5" <<< "$all" ||
  fail "no paused trial was resumed from its rung checkpoint in the container"
status=$(as_user dlx status "$asha")
expect_contains "dlx status of the ASHA search" "$status" "completed at 96"
expect_contains "dlx status of the ASHA search" "$status" "paused at 24"
expect_contains "dlx status of the ASHA search" "$status" "# image $IMAGE with crun"
note "ASHA over the ResNet example in crun containers: promotions resumed from rung checkpoints, none failed"

# ---- 6. Apptainer runs an OCI layout itself ------------------------------------------------------
# dlx gives it the layout as `oci:PATH` (Apptainer converts and caches it, not dlx): both layers,
# the whiteout applied.
if testing apptainer; then
  sed -e 's/^name: cached-a/name: apptainer-oci/' -e 's/runtime: crun/runtime: apptainer/' \
    -e 's/vals: \[1, 2, 3\]/vals: [1]/' "$WORK/cached-a.yaml" > "$WORK/apptainer-oci.yaml"
  run_trial apptainer-oci 240
  expect_contains "apptainer-oci's launch" "$out" "runs in the container image oci:$layout (an OCI layout) with apptainer"
  expect_contains "apptainer-oci" "$out" "from the second layer"
  expect_contains "apptainer-oci" "$out" "whiteout-applied"
  expect_contains "dlx status of apptainer-oci" "$(as_user dlx status "$job")" "# image oci:$layout with apptainer"
  note "apptainer ran the OCI layout oci:$layout: both layers, the whiteout applied"
fi

# Every run's bundle, skeleton and environment file went with it, the refused one's too.
test_jobs+=("${cache_jobs[@]}" "$asha")
ls -d "$CLUSTER"/tmp/n*/dlx-*/containers > /dev/null 2>&1 || fail "no node has the runs' containers directory"
left=$(for job in "${test_jobs[@]}"; do ls -d "$CLUSTER"/tmp/n*/dlx-*/containers/dlx-"${job}"_* 2>/dev/null || true; done)
[ -z "$left" ] || fail "runs left their container state on the nodes: $left"
note "no run left its container state on a node"
# Enroot: each node unpacked the image once, into dlx's node-local directory (not the user's
# ENROOT_DATA_PATH), and the other runs there started that container again.
if testing enroot; then
  logs=$(cat "$WORK"/probe-enroot-*.out "$WORK"/torch-enroot-*.out)
  unpacks=$(grep -c "enroot: the image $SQUASHFS unpacked once on this node" <<< "$logs" || true)
  reuses=$(grep -Ec "enroot: the image $SQUASHFS (is unpacked on this node already|was unpacked on this node by another run)" <<< "$logs" || true)
  containers=$(ls -d "$CLUSTER"/tmp/n*/dlx-*/containers/enroot/dlx-* 2>/dev/null | wc -l)
  [ "$unpacks" -ge 1 ] && [ "$unpacks" = "$containers" ] && [ "$reuses" -ge 1 ] ||
    fail "enroot: $unpacks unpacks, $containers containers on the nodes, $reuses reuses: $(grep "enroot:" <<< "$logs")"
  left=$(ls -A "$WORK/.local/share/enroot" 2>/dev/null || true)
  [ -z "$left" ] || fail "enroot containers were made in the user's own ENROOT_DATA_PATH: $left"
  note "enroot: $unpacks unpacks (one per node that ran the image), $reuses runs started the node's container again"
  # A new version of the image file: the next run on a node unpacks it and removes the old
  # version's container, which no run holds any more (<local>/dlx-<uid>/containers/enroot/<name>).
  old_container=$(ls -d "$CLUSTER"/tmp/n*/dlx-*/containers/enroot/dlx-* | head -n 1)
  node=$(basename "$(dirname "$(dirname "$(dirname "$(dirname "$old_container")")")")")
  touch "$SQUASHFS"
  write_probe enroot-new-version enroot "$SQUASHFS"
  job=$(job_id_of "$(as_user sbatch --parsable -w "$node" --output="enroot-new-version-%A_%a.out" \
    --dl-experiment=enroot-new-version.yaml probe.sh)")
  test_jobs+=("$job")
  wait_for_job "$job" 180
  out=$WORK/enroot-new-version-${job}_0.out
  grep -q "^probe: done" "$out" || fail "the probe of the image's new version did not finish: $(tail -n 30 "$out")"
  expect_contains "the new version's run on $node" "$(cat "$out")" \
    "enroot: removed container $(basename "$old_container") of an older version of $SQUASHFS from this node"
  [ ! -e "$old_container" ] || fail "enroot: the old version's container $old_container is still there"
  kept=$(ls -d "$(dirname "$old_container")"/dlx-* | wc -l)
  [ "$kept" = 1 ] || fail "enroot: $kept containers on $node, not the new version's alone: $(ls "$(dirname "$old_container")")"
  note "enroot: a new version of the image file unpacked on $node, the old version's container removed"
fi
