#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# dlx's GPU checks, in one command, on a bare CUDA machine (nvcc, a C++ compiler, PyTorch with its
# NCCL, CMake and ninja; no Debian packages, no MPI, no HDF5, no network), with the bundle that
# scripts/gpu-bundle.sh made here (.gpu-bundle.tar.xz) beside the working tree:
#
#   bash scripts/gpu-check.sh           # on the GPU machine, as root; results under $OUT
#   bash scripts/gpu-check.sh --local   # here, without a GPU: the build half, DLX_WITH_CUDA=OFF,
#                                       # against the bundle alone; the GPU checks then skip
#   DLX_GPU_CHECKS="torch ddp" bash scripts/gpu-check.sh   # only these checks (after the build)
#
# Steps (each with a time limit; a failed step is recorded and the next one still runs):
#   facts       the machine: GPU, driver, CUDA, NCCL, compiler, PyTorch
#   bundle      unpack the bundle; make its libraries and Open MPI's Debian paths visible
#               (ld.so.conf.d after the system's own directories, so the machine's newer
#               libraries win; a Debian path is linked only where the machine has none)
#   build       configure against the bundle only (CMAKE_FIND_ROOT_PATH, mode ONLY) and build the
#               programs the checks run. Where that fails and .gpu-prebuilt/ (binaries built on
#               bookworm: scripts/gpu-bundle.sh --prebuilt) was carried, the checks use those.
#   nccl        tests/gpu/nccl_backend_check.cpp under mpirun, one rank per GPU: the NCCL
#               backend through dlx::Trial, every dtype, fused and overlapped paths
#   nccl_device tests/gpu/nccl_device_check.cpp: device tensors summed in place (every dtype,
#               fused buckets packed by the copy kernel, stream order, no host staging, same bits
#               as the host path)
#   allreduce   bench/gpu/bench_allreduce_nccl.cpp: the backend against raw NCCL, host and
#               device tensors
#   checkpoint  tests/gpu/checkpoint_device_check.cpp: D2H snapshot rate (through the bounded
#               pinned pieces), stall, bit-exact resume, the background snapshot (bit-exact with
#               the device memory overwritten after wait_for_snapshot), a load straight into
#               device memory
#   metrics     tests/gpu/gpu_metrics_check.cpp: the sampler's GPU series with a neighbour process
#   logreg      the example trainer on the GPU (NCCL backend) twice and on the CPU: the GPU runs
#               bit-identical, the GPU and CPU curves within the documented tolerance
#   torch       tests/gpu/torch_cuda_check.py: dlx.torch with a CUDA model and AMP, resume
#               bit-exact both ways (DLX_TORCH_CUDA_IO), save/load against torch.save/torch.load,
#               what a save costs four training steps (DLX_TORCH_SNAPSHOT both ways)
#   ddp         examples/pytorch/ddp.py under dlx-launch, one rank, the NCCL process group
#   torch_bench bench/torch/bench_torch_state.py (its CUDA snapshot figure)
#   packing     bench/packing/bench_packed_trials.py: 4 small-CNN trials packed on the GPU under
#               dlx-launch (trials_per_gpu: 4; and with resources.mps where the node has MPS)
#               against one at a time: trials per hour
# Output: $OUT/gpu-check.log (everything), $OUT/results.txt (one line per step, every
# '# result:' line, the facts). Exit status: the number of failed steps (0: all passed).
# Settings: OUT (default ./gpu-check-out), PYTHON (the python3 with PyTorch), DLX_GPU_CHECKS,
# DLX_GPU_DEADLINE (560 s), DLX_GPU_BUILD_LIMIT (270 s), DLX_GPU_BUNDLE_DIR (where to unpack).
# On the GPU machine it changes the system (it is meant for a disposable one): a file in
# /etc/ld.so.conf.d and links at Open MPI's Debian paths. Where the machine has an Open MPI of
# its own at those paths, that one runs the programs (results.txt says which was kept).
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
local_mode=false
[ "${1:-}" = --local ] && local_mode=true
OUT=${OUT:-$repo/gpu-check-out}
python=${PYTHON:-python3}  # the one with PyTorch (on the GPU machine: the first python3)
mkdir -p "$OUT"
results=$OUT/results.txt
: > "$results"
exec > >(tee "$OUT/gpu-check.log") 2>&1
failed=0
work=$(mktemp -d "${TMPDIR:-/tmp}/dlx-gpu-check-XXXXXX")
started=$(date +%s)
deadline=${DLX_GPU_DEADLINE:-560}

# step NAME SECONDS COMMAND...: runs COMMAND with a time limit; records PASS, SKIP (status 77)
# or FAIL with its duration.
step() {
  local name=$1 limit=$2 status
  shift 2
  case " bundle build ${DLX_GPU_CHECKS:-$name} " in
    *" $name "*) ;;
    *) echo "SKIP $name (not in DLX_GPU_CHECKS)" | tee -a "$results"; return 77 ;;
  esac
  # The whole script ends within DLX_GPU_DEADLINE seconds (a remote command's 10 minutes, less a
  # margin), so that its results come back: a step gets what is left, or is skipped.
  local left=$((deadline - ($(date +%s) - started)))
  if [ "$left" -lt 20 ]; then
    echo "SKIP $name (no time left before the deadline)" | tee -a "$results"
    return 77
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  echo "=== $name ($(date -u +%T), limit ${limit} s)"
  local begin=$SECONDS
  # A function or a program, in a child bash (timeout runs programs only): it sees the exported
  # functions and variables below.
  timeout --kill-after=10 "$limit" bash -c '"$@"' "$name" "$@"
  status=$?
  local verdict=PASS
  if [ "$status" = 77 ]; then verdict=SKIP
  elif [ "$status" != 0 ]; then verdict="FAIL (status $status$([ "$status" = 124 ] && echo ', timed out'))"
    failed=$((failed + 1))
  fi
  echo "$verdict $name ($((SECONDS - begin)) s)" | tee -a "$results"
  return "$status"
}

facts() {
  echo "date: $(date -u +'%F %T UTC')"
  echo "host: $(uname -srm), $(. /etc/os-release 2> /dev/null && echo "$PRETTY_NAME"), $(nproc) cores"
  if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/gpu: /'
  else
    echo "gpu: none (no nvidia-smi)"
  fi
  command -v nvcc > /dev/null && echo "nvcc: $(nvcc --version | grep -o 'release [0-9.]*, V[0-9.]*')"
  echo "c++: $(c++ --version 2> /dev/null | head -1)"
  echo "cmake: $(cmake --version 2> /dev/null | head -1); ninja $(ninja --version 2> /dev/null)"
  "$python" - << 'EOF' 2> /dev/null || echo "torch: not importable"
import torch
nccl = ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else "-"
print(f"torch: {torch.__version__}, CUDA {torch.version.cuda}, NCCL {nccl}, "
      f"GPU visible: {torch.cuda.is_available()}")
EOF
  echo "tmp: $(df -hT "$work" | tail -1 | awk '{print $2, $3, "free", $5}')"
}

# ---- bundle: unpack, and make its programs and libraries usable ----
bundle=${DLX_GPU_BUNDLE_DIR:-$work/bundle}
root=$bundle/root
multiarch=usr/lib/x86_64-linux-gnu
find_nccl() {  # sets nccl_lib (libnccl.so.2) and nccl_include (a dir with nccl.h)
  nccl_lib="" nccl_include=""
  local candidate
  for candidate in /usr/local/cuda/lib64/libnccl.so.2 /usr/local/cuda/lib/libnccl.so.2 \
      $("$python" -c 'import nvidia, os; [print(p) for p in nvidia.__path__]' 2> /dev/null |
        xargs -r -I{} find {} -name 'libnccl.so.2' 2> /dev/null) \
      $(find /usr /opt -name 'libnccl.so.2' 2> /dev/null | head -5); do
    if [ -f "$candidate" ]; then nccl_lib=$candidate; break; fi
  done
  [ -n "$nccl_lib" ] || return 0
  for candidate in "$(dirname "$nccl_lib")/../include" /usr/local/cuda/include "$bundle/nccl/include"; do
    if [ -f "$candidate/nccl.h" ]; then nccl_include=$(cd "$candidate" && pwd); break; fi
  done
}
unpack_bundle() {
  local archive=$repo/.gpu-bundle.tar.xz
  [ -f "$archive" ] || { echo "no $archive: run scripts/gpu-bundle.sh here first"; return 1; }
  rm -rf "$bundle" && mkdir -p "$bundle"
  if command -v xz > /dev/null; then tar -C "$bundle" -xJf "$archive"
  else "$python" -m tarfile -e "$archive" "$bundle"; fi || return 1
  head -1 "$bundle/MANIFEST"
  find_nccl
  # pkg-config and the bundle's h5cc would print the Debian paths, not the bundle's.
  rm -f "$root"/usr/bin/h5*cc "$root/$multiarch"/hdf5/serial/bin/h5*cc
  find_nccl
  echo "nccl: ${nccl_lib:-none found} (header: ${nccl_include:-none})"
  $local_mode && return 0
  # The machine's own directories come first (x86_64-linux-gnu.conf sorts before zz-).
  printf '%s\n' "$root/$multiarch" "$root/$multiarch/openmpi/lib" "$root/$multiarch/hdf5/serial" \
    ${nccl_lib:+"$(dirname "$nccl_lib")"} > /etc/ld.so.conf.d/zz-dlx-gpu-bundle.conf
  ldconfig
  # Open MPI and PMIx find their components, help texts and wrapper data at the Debian paths
  # they were built for: link those the machine lacks to the bundle.
  local path
  for path in $multiarch/openmpi $multiarch/pmix2 usr/share/openmpi usr/share/pmix etc/openmpi; do
    if [ -e "/$path" ]; then echo "keeping the machine's /$path" | tee -a "$results"
    elif [ -e "$root/$path" ]; then mkdir -p "$(dirname "/$path")" && ln -s "$root/$path" "/$path"; fi
  done
}

# ---- build: against the bundle only ----
build=$work/build
prebuilt=$repo/.gpu-prebuilt
build_dlx() {
  local cuda=ON roots="$root;/"
  if $local_mode; then cuda=OFF roots=$root; fi
  export PKG_CONFIG_LIBDIR=$root/$multiarch/pkgconfig:$root/usr/share/pkgconfig:$root/usr/lib/pkgconfig
  export PKG_CONFIG_SYSROOT_DIR=$root
  local args=(
    -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDLX_WITH_CUDA=$cuda
    -DCMAKE_UNITY_BUILD=ON  # as scripts/build.sh: a third of the compile time
    -DCMAKE_C_COMPILER="$(command -v cc)" -DCMAKE_CXX_COMPILER="$(command -v c++)"
    -DCMAKE_MAKE_PROGRAM="$(command -v ninja)"
    # the machine's binutils (programs are searched in the bundle only)
    -DCMAKE_AR="$(command -v ar)" -DCMAKE_RANLIB="$(command -v ranlib)"
    -DCMAKE_LINKER="$(command -v ld)" -DCMAKE_NM="$(command -v nm)"
    -DCMAKE_OBJCOPY="$(command -v objcopy)" -DCMAKE_OBJDUMP="$(command -v objdump)"
    -DCMAKE_STRIP="$(command -v strip)" -DCMAKE_READELF="$(command -v readelf)"
    -DCMAKE_FIND_ROOT_PATH="$roots" -DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=ONLY
    -DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=ONLY -DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=ONLY
    -DCMAKE_FIND_ROOT_PATH_MODE_PROGRAM=ONLY
    -DPKG_CONFIG_EXECUTABLE="$root/usr/bin/pkgconf"
    -DProtobuf_PROTOC_EXECUTABLE="$root/usr/bin/protoc"
    -DMPI_C_COMPILER="$root/usr/bin/mpicc"
    -DDLX_CHART_JS="$root/usr/share/javascript/chart.js/chart.min.js")
  if [ "$cuda" = ON ]; then
    args+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCUDAToolkit_ROOT=/usr/local/cuda
           -DCMAKE_CUDA_ARCHITECTURES=90 -DNCCL_LIBRARY="$nccl_lib" -DNCCL_INCLUDE_DIR="$nccl_include")
  fi
  cmake "${args[@]}" || return 1
  local targets=(dlx-launch dlx_c dlx-example-logreg dlx)
  [ "$cuda" = ON ] && targets+=(dlx-gpu-nccl-check dlx-gpu-nccl-device-check dlx-gpu-checkpoint-check bench_allreduce_nccl dlx-gpu-metrics-check)
  cmake --build "$build" --parallel "$(nproc)" --target "${targets[@]}"
}
use_prebuilt() {
  [ -d "$prebuilt/bin" ] || return 1
  echo "the build failed: running the checks on the carried binaries built on bookworm ($prebuilt)"
  echo "NOTE build failed; checks ran on .gpu-prebuilt" >> "$results"
  build=$prebuilt
}

# ---- the checks ----
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader \
  OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none PYTHONUNBUFFERED=1
mpirun_cmd() { "$root/usr/bin/mpirun" "$@"; }
have_gpu() { command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; }

# The example trainer on DEVICE as trial NAME: trials/<NAME>/trial.h5 under $work/logreg.
logreg_run() {
  local name=$1 device=$2
  mkdir -p "$work/logreg/trials"
  DLX_EXPERIMENT_DIR=$work/logreg/$name DLX_TRIAL_ID=0 \
    DLX_HPARAMS="{\"learning_rate\":0.1,\"batch_size\":32,\"epochs\":4,\"device\":\"$device\"}" \
    mpirun_cmd -n 1 "$build/bin/dlx-example-logreg"
}
logreg_check() {
  if ! have_gpu; then echo "no GPU: the CPU run only"; logreg_run cpu cpu || return 1; return 77; fi
  DLX_COMM_BACKEND=nccl logreg_run gpu1 gpu && DLX_COMM_BACKEND=nccl logreg_run gpu2 gpu &&
    DLX_COMM_BACKEND=mpi logreg_run cpu cpu || return 1
  "$python" - "$work/logreg" << 'EOF'
import glob, sys
import h5py, numpy
root = sys.argv[1]
def curves(name):
    [path] = glob.glob(f"{root}/{name}/**/trial.h5", recursive=True)
    with h5py.File(path, "r") as f:
        return {f"{t}/{m}": f[f"metrics/{t}/{m}"][:] for t in ("training", "validation")
                for m in f[f"metrics/{t}"] if m not in ("steps", "wall_time")}
gpu1, gpu2, cpu = curves("gpu1"), curves("gpu2"), curves("cpu")
same = all(numpy.array_equal(gpu1[k], gpu2[k]) for k in gpu1) and gpu1.keys() == gpu2.keys()
worst = max(float(numpy.max(numpy.abs(gpu1[k] - cpu[k]) / numpy.maximum(numpy.abs(cpu[k]), 1e-300)))
            for k in cpu)
print(f"{'ok  ' if same else 'FAIL'} GPU run twice: bit-identical metrics ({', '.join(sorted(gpu1))})")
print(f"# result: logreg_gpu_vs_cpu_max_relative_difference {worst:.3g} (tolerance 1e-9: "
      f"{'met' if worst <= 1e-9 else 'MISSED'})")
print("final validation:", {k: float(v[-1]) for k, v in gpu1.items() if k.startswith("validation")},
      "cpu:", {k: float(v[-1]) for k, v in cpu.items() if k.startswith("validation")})
sys.exit(0 if same and worst <= 1e-9 else 1)
EOF
}
python_env() {
  env DLX_LIBRARY="$build/lib/libdlx_c.so" PYTHONPATH="$repo/python" "$@"
}
ddp_check() {  # on the GPU: the NCCL process group; without one (--local) gloo, for the wiring
  local dir=$work/ddp
  mkdir -p "$dir/trials/0/checkpoints"
  # An experiment file, so that dlx-launch samples the run (its GPU series are read back below).
  printf '%s\n' 'name: ddp-gpu' 'entrypoint: [python3, ddp.py]' \
    'searcher: {name: single, metric: loss, max_length: {batches: 100}}' 'resources: {sample_period: 0.5}' \
    > "$dir/experiment.yaml"
  DLX_EXPERIMENT_DIR=$dir DLX_TRIAL_ID=0 DLX_HPARAMS='{"epochs":3,"batch_size":64}' \
    DLX_CHECKPOINT_DIR=$dir/trials/0/checkpoints \
    python_env "$build/bin/dlx-launch" -- "$python" "$repo/examples/pytorch/ddp.py" |
    tee "$work/ddp.out"
  [ "${PIPESTATUS[0]}" = 0 ] || return 1
  if have_gpu && ! grep -q 'backend nccl' "$work/ddp.out"; then
    echo "FAIL: DDP did not use the NCCL backend"
    return 1
  fi
  if have_gpu && [ -x "$build/bin/dlx-gpu-metrics-check" ]; then
    "$build/bin/dlx-gpu-metrics-check" --show "$dir/trials/0" || return 1
  fi
}

export -f facts find_nccl unpack_bundle build_dlx mpirun_cmd have_gpu logreg_run logreg_check \
  python_env ddp_check
export repo local_mode work bundle root multiarch build OUT results python

echo "# dlx gpu-check, $(git -C "$repo" log -1 --format='%h %s' 2> /dev/null)"
facts 2>&1 | tee -a "$results"
step bundle 120 unpack_bundle || { echo "$failed step(s) failed"; exit "$failed"; }
find_nccl
export nccl_lib nccl_include
if ! step build "${DLX_GPU_BUILD_LIMIT:-270}" build_dlx; then
  use_prebuilt || { echo "no build and no .gpu-prebuilt/: stopping"; exit "$failed"; }
  export build
fi
if ! $local_mode && ! have_gpu; then echo "no GPU visible: the GPU checks will skip"; fi
# One rank per GPU for the NCCL checks: with two or more, the sums cross GPUs and the bench
# judges its device targets (with one, NCCL sums nothing and they are information).
ranks=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU ')
[ "${ranks:-0}" -ge 1 ] 2> /dev/null || ranks=1
echo "ranks for the NCCL checks: $ranks" | tee -a "$results"
if [ -x "$build/bin/dlx-gpu-nccl-check" ]; then
  step nccl 120 mpirun_cmd -n "$ranks" "$build/bin/dlx-gpu-nccl-check"
  if [ -x "$build/bin/dlx-gpu-nccl-device-check" ]; then  # absent from an older .gpu-prebuilt
    step nccl_device 120 mpirun_cmd -n "$ranks" "$build/bin/dlx-gpu-nccl-device-check"
  fi
  step allreduce 120 mpirun_cmd -n "$ranks" "$build/bin/bench_allreduce_nccl"
  step checkpoint 240 "$build/bin/dlx-gpu-checkpoint-check" --mib 1024 --repeats 5 --dir "$work/ckpt"
  step metrics 90 "$build/bin/dlx-gpu-metrics-check" --python "$python" --dir "$work/metrics"
fi
step logreg 180 logreg_check
step torch 300 python_env "$python" "$repo/tests/gpu/torch_cuda_check.py"
step ddp 180 ddp_check
if have_gpu; then
  step torch_bench 150 python_env "$python" "$repo/bench/torch/bench_torch_state.py" --mib 512 \
    --repeats 3 --memory-repeats 1 --load-repeats 3 --dir "$work/torch-bench"
fi
if have_gpu; then
  step packing 240 python_env DLX_LAUNCH="$build/bin/dlx-launch" "$python" "$repo/bench/packing/bench_packed_trials.py"
fi
grep -h '^# result:' "$OUT/gpu-check.log" >> "$results"
echo "# $failed step(s) failed; $(( $(date +%s) - started )) s in all" | tee -a "$results"
rm -rf "$work"
exec > /dev/null 2>&1  # lets tee finish the log before the script ends
sleep 1
exit "$failed"
