#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Containers (docs/containers.md): time to first step of the 2nd..Nth trial on a node in a
# container against the same trial on the bare node (target: container <= 1.1 x bare + 0.5 s),
# the first conversion of an OCI image, and the image's bytes per node.
#   bash bench/container/bench_first_step.sh --build-dir build [--trials 6] [--image ROOTFS]
#                                            [--runtimes "crun podman"] [--no-conversion]
# --runtimes may also name apptainer and enroot where they are on PATH (scripts/container-check.sh
# installs both as test rigs); Enroot gets the image as a squashfs file, made here.
# The clock passes into the container as DLX_BENCH_T0 (dlx passes DLX_* variables, not the
# host's others). Runs dlx-launch directly (a trial outside Slurm: DLX_EXPERIMENT_DIR + DLX_TRIAL_ID) on this
# host, as whoever runs it, alternating bare and container trials so that they share the
# machine's noise; each trial's clock starts just before dlx-launch and stops at the trainer's
# first step, after `import torch` and `dlx.Trial()`. The image is the tests' (PyTorch, h5py and
# what libdlx_c links, from Debian's packages: tests/container/make_image.py) unless --image
# names one. The conversion: the same image as a one-layer OCI layout, run once with an empty
# image cache ("converted once, in X s") and copied to this node ("copied X").
set -euo pipefail
build_dir="" trials=6 image="" runtimes="crun podman" conversion=yes
# Rootful Podman sets its own default limits on the container, which a machine that withholds
# CAP_SYS_RESOURCE from root refuses (this project's VMs): as root, crun only, unless asked.
[ "$(id -u)" != 0 ] || runtimes="crun"
usage="usage: $0 --build-dir BUILD [--trials N] [--image ROOTFS] [--runtimes \"crun podman\"] [--no-conversion]"
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) build_dir=$(cd "$2" && pwd); shift 2 ;;
    --trials) trials=$2; shift 2 ;;
    --image) image=$(cd "$2" && pwd); shift 2 ;;
    --runtimes) runtimes=$2; shift 2 ;;
    --no-conversion) conversion=""; shift ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
[ -n "$build_dir" ] && [ "$trials" -ge 2 ] || { echo "$usage" >&2; exit 2; }
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
launch=$build_dir/bin/dlx-launch
[ -x "$launch" ] || { echo "no $launch: build dlx-launch first" >&2; exit 2; }
dir=$(mktemp -d /var/tmp/dlx-bench-container.XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 0755 "$dir"
if [ -z "$image" ]; then
  image=$dir/image
  /usr/bin/python3 "$source_dir/tests/container/make_image.py" "$image" --library "$build_dir/lib/libdlx_c.so.0" \
    python3-torch python3-h5py python3-numpy dash coreutils > /dev/null
fi
# Podman with runc and cgroupfs (crun refuses a hybrid cgroup hierarchy), in the bench's own
# storage: the site's containers.conf does this on a real cluster.
printf '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n' > "$dir/containers.conf"
export CONTAINERS_CONF=$dir/containers.conf

cat > "$dir/first_step.py" <<'PY'
import os, time
import torch  # noqa: F401  (what a PyTorch trainer's first step waits for)
import dlx
with dlx.Trial() as trial:
    print(f"first-step {(time.time_ns() - int(os.environ['DLX_BENCH_T0'])) / 1e9:.4f}", flush=True)
PY
write_experiment() {  # write_experiment NAME [CONTAINER_YAML]
  mkdir -p "$dir/$1"
  {
    echo "name: $1"
    echo "entrypoint: [/usr/bin/python3, $dir/first_step.py]"
    echo "hyperparameters: {x: {type: int, minval: 1, maxval: 1000000}}"
    echo "searcher: {name: random, metric: loss, max_trials: $trials, max_concurrent_trials: 1}"
    echo "resources: {sample_period: 0}"
    [ -z "${2:-}" ] || echo "$2"
  } > "$dir/$1/experiment.yaml"
}
write_experiment bare
for runtime in $runtimes; do
  runtime_image=$image
  if [ "$runtime" = enroot ]; then  # Enroot runs squashfs files: the same image as one
    runtime_image=$dir/image.sqsh
    mksquashfs "$image" "$runtime_image" -noappend -quiet -comp lz4 > /dev/null
  fi
  write_experiment "$runtime" "container: {runtime: $runtime, image: $runtime_image}"
done
run_trial() {  # run_trial KIND TRIAL: the trial's output
  (cd "$dir" && DLX_BENCH_T0=$(date +%s%N) TMPDIR=$dir/local DLX_EXPERIMENT_DIR=$dir/$1 DLX_TRIAL_ID=$2 "$launch" 2>&1)
}
mkdir -p "$dir/local" "$dir/home"
export HOME=$dir/home  # Podman's storage and state, the bench's own
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
echo "# containers: time to first step (import torch, dlx.Trial()), $trials trials per kind, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
echo "# trial  bare_s  $(for r in $runtimes; do printf '%s_s  ' "$r"; done)"
declare -A times
for t in $(seq 0 $((trials - 1))); do
  line="  $((t + 1))"
  for kind in bare $runtimes; do
    out=$(run_trial "$kind" "$t")
    s=$(echo "$out" | awk '/^first-step/ {print $2}')
    [ -n "$s" ] || { echo "bench_first_step: the $kind trial $t failed: $out" >&2; exit 1; }
    line+="      $s"
    if [ "$t" -gt 0 ]; then times[$kind]+="$s "; fi
  done
  echo "$line"
done
bare=$(median ${times[bare]})
for runtime in $runtimes; do
  container=$(median ${times[$runtime]})
  awk -v c="$container" -v b="$bare" -v r="$runtime" 'BEGIN {
    printf "# result: time_to_first_step_trials_2_to_N_%s_median_s %.3f bare_median_s %.3f ratio %.2f bound_s %.3f (target <= 1.1 x bare + 0.5 s: %s)\n",
      r, c, b, c / b, 1.1 * b + 0.5, (c <= 1.1 * b + 0.5) ? "met" : "missed" }'
done

[ -n "$conversion" ] || exit 0
echo "# the first conversion: the image as a one-layer OCI layout, an empty image cache"
layout_start=$(date +%s%N)
/usr/bin/python3 "$source_dir/tests/container/make_oci_layout.py" "$dir/layout" --layer "$image" > /dev/null
echo "# (making the layout itself, outside dlx: $(( ($(date +%s%N) - layout_start) / 1000000 )) ms)"
write_experiment converted "container: {runtime: crun, image: \"oci:$dir/layout\"}"
out=$(run_trial converted 0)
echo "$out" | grep -E "converted once|the image sha256" | sed 's/^/#   /'
seconds=$(echo "$out" | sed -n 's/.*converted once, in \([0-9.]*\) s.*/\1/p')
bytes=$(du -sb "$dir/local"/dlx-*/data 2>/dev/null | awk '{print $1}')
[ -n "$seconds" ] || { echo "bench_first_step: no conversion line: $out" >&2; exit 1; }
echo "# result: oci_first_conversion_s $seconds (once per user and image digest, on shared storage)"
echo "# result: image_bytes_per_node $bytes (the node-local copy: once per node and image)"
second=$(run_trial converted 1 | awk '/^first-step/ {print $2}')
echo "# result: oci_trial_2_first_step_s $second (the converted image found and the node's copy reused)"
