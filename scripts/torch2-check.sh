#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# dlx.torch and the Determined layer on another PyTorch and Python than this machine's: Debian
# trixie's python3-torch 2.6 (Python 3.13, numpy 2.2, built without libuv), the kind of image a
# site runs trials in (docs/containers.md, "Images dlx was run in"). Needs root (debootstrap,
# chroot), the network to the Debian mirror this machine's apt uses, about 2 GB, and about 8
# minutes on 2 cores (3 for the root, the rest the tests). Not in CI.
#
#   bash scripts/torch2-check.sh PORTABLE_LIBDLX_C      (scripts/portable-c.sh makes it)
#
# 1. A debootstrap root of trixie (DLX_TORCH2_SUITE) with python3-torch, python3-torchvision
#    and python3-h5py, in a private directory below DLX_TORCH2_DIR (default /var/tmp), removed
#    after a pass; DLX_TORCH2_ROOT=DIR takes a root made before instead (and keeps it).
# 2. The tests whose trainers the tests start themselves (dlx-launch is this machine's build and
#    would not load there), each in the root as nobody, in PID and mount namespaces of its own
#    with a fresh /proc and /tmp, the source tree read-only at its own path and the portable
#    libdlx_c as DLX_LIBRARY: tests/torch (save and load, the store without libuv, loads in
#    place, the background snapshot, the save at a searcher target, the loop's logic and its
#    errors, two gloo ranks resuming, and dlx.torch.Loop requeued on one and two ranks and with
#    random transforms in DataLoader workers, each compared bit for bit with an uninterrupted
#    run) and the Determined layer's reducers. Each test's time and result go to the output.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
suite=${DLX_TORCH2_SUITE:-trixie}
source scripts/private_dir.sh
source scripts/debian_mirror.sh
say() { echo "torch2-check: $*"; }
fail() { echo "torch2-check: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (debootstrap, chroot)"
[ $# = 1 ] || fail "usage: bash scripts/torch2-check.sh PORTABLE_LIBDLX_C (sudo bash scripts/portable-c.sh DIR makes DIR/libdlx_c.so.0)"
library=$(realpath -e -- "$1") || fail "no file $1: sudo bash scripts/portable-c.sh DIR makes DIR/libdlx_c.so.0"
for tool in debootstrap unshare chroot; do
  command -v "$tool" > /dev/null || fail "$tool is missing: bash scripts/install-deps.sh installs it"
done

work=$(private_dir "${DLX_TORCH2_DIR:-/var/tmp}" dlx-torch2) || exit 1
trap 'private_dir_done torch2-check "$work" $?' EXIT
say "working in $work"
if [ -n "${DLX_TORCH2_ROOT:-}" ]; then
  root=$(owned_dir_check "$DLX_TORCH2_ROOT") || exit 1
  [ -x "$root/usr/bin/python3" ] || fail "$root has no /usr/bin/python3: not a root this script made"
else
  root=$work/root
  mirror=$(debian_mirror)
  [ -n "$mirror" ] || fail "no Debian mirror (a .../debian URI) in /etc/apt/sources.list*"
  say "debootstrap $suite with PyTorch into $root"
  SECONDS=0
  debootstrap --variant=minbase --include=python3,python3-torch,python3-torchvision,python3-h5py,python3-numpy \
    "$suite" "$root" "$mirror" > "$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; fail "debootstrap failed (log: $work/debootstrap.log)"; }
  say "the $suite root took $SECONDS s"
fi

# in_root LOG PYTHONPATH COMMAND...: COMMAND in the root as nobody (see the header).
in_root() {
  local log=$1 path=$2
  shift 2
  unshare --mount --pid --fork bash -c '
    set -e
    root=$1 src=$2 library=$3 path=$4
    shift 4
    mount --make-rprivate /
    mkdir -p "$root$src" "$root/dlx/lib"
    mount --bind "$src" "$root$src"
    mount -o remount,bind,ro "$root$src"
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
    touch "$root/dlx/lib/libdlx_c.so.0"
    mount --bind -o ro "$library" "$root/dlx/lib/libdlx_c.so.0"
    cd "$root/tmp"
    exec chroot --userspec=65534:65534 "$root" /usr/bin/env -i HOME=/tmp PATH=/usr/bin:/bin LANG=C.UTF-8 \
      DLX_LIBRARY=/dlx/lib/libdlx_c.so.0 PYTHONPATH="$path" "$@"
  ' bash "$root" "$src" "$library" "$path" "$@" > "$log" 2>&1
}

# (With /proc: PyTorch's UCX says on stdout what it misses without.)
in_root "$work/versions.log" "" python3 -c \
  'import sys, numpy, torch; print(f"PyTorch {torch.__version__}, Python {sys.version.split()[0]}, numpy {numpy.__version__}")' ||
  { cat "$work/versions.log" >&2; fail "PyTorch does not import in $root"; }
versions=$(tail -1 "$work/versions.log")
say "$suite: $versions"

tests=(
  "state|python|tests/torch/torch_state_test.py"
  "rendezvous|python|tests/torch/torch_rendezvous_test.py"
  "load_in_place|python|tests/torch/torch_load_in_place_test.py"
  "snapshot_fence|python|tests/torch/torch_snapshot_fence_test.py"
  "snapshot_target|python|tests/torch/torch_snapshot_target_test.py"
  "loop_logic|python|tests/torch/torch_loop_logic_test.py"
  "loop_errors|python|tests/torch/torch_loop_errors_test.py"
  "two_ranks|python|tests/torch/torch_two_ranks_test.py"
  "loop|python|tests/torch/torch_loop_test.py - $src unseeded ranks transforms"
  "determined_reducers|python:python/dlx/compat|tests/determined_api/reducer_logic_test.py"
)
failed=()
for entry in "${tests[@]}"; do
  IFS='|' read -r name path command <<< "$entry"
  read -ra words <<< "$command"
  pythonpath=$(sed "s|\([^:]*\)|$src/\1|g" <<< "$path")
  SECONDS=0
  if in_root "$work/$name.log" "$pythonpath" python3 "$src/${words[0]}" "${words[@]:1}"; then
    say "ok    $name ($SECONDS s)"
  else
    say "FAIL  $name ($SECONDS s): $(tail -3 "$work/$name.log" | tr '\n' ' ')"
    failed+=("$name")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  fail "${#failed[@]} of ${#tests[@]} failed on $versions: ${failed[*]} (logs in $work)"
fi
say "all ${#tests[@]} passed on $suite's $versions"
