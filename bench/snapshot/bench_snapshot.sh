#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench_snapshot.sh: what the code snapshot adds to `sbatch --dl-experiment` (issue 22): sbatch's
# wall time for a git repository of 2,000 files and 10 MB (1,800 committed, 150 of them modified,
# 200 untracked, a .gitignore'd build directory beside them) with the snapshot, against the same
# submission with `code: {snapshot: false}`, alternating which goes first; the jobs are submitted
# held and cancelled at once, so only the submission is timed. Runs against a running local
# cluster (`dlx cluster up`, or the cluster tests' /tmp/dlx-ctest/cluster).
#
#   bench/snapshot/bench_snapshot.sh --state-dir /tmp/dlx-cluster --build-dir build [--repeats 10]
# Prints `# result: sbatch_snapshot_added_seconds <s> (target <= 0.3)` and the ratio, the load
# average (the figures depend on it), then the snapshot's phases timed through the library
# (bench_snapshot_phases, when the build directory has it).
set -euo pipefail
repeats=10
. "$(dirname "$0")/../cluster_bench_args.sh"
eval "$("$build_dir/bin/dlx" cluster env --state-dir "$state_dir")"
export PATH=$build_dir/bin:$PATH

work=$(mktemp -d -t dlx-bench-snapshot.XXXXXX)  # under $TMPDIR when set
trap 'rm -rf "$work"' EXIT
repo=$work/repo
mkdir -p "$repo"
/usr/bin/python3 - "$repo" <<'PY'
import os, random, sys
random.seed(1)
repo = sys.argv[1]
for i in range(2000):  # 2,000 files of 5,243 bytes: 10 MiB
    path = os.path.join(repo, f"pkg{i % 40}", f"module_{i}.py")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(bytes(random.getrandbits(7) + 32 for _ in range(5243)))
os.makedirs(os.path.join(repo, "build"), exist_ok=True)
for i in range(200):  # ignored: listed by nobody, copied by nobody
    with open(os.path.join(repo, "build", f"obj_{i}.o"), "wb") as f:
        f.write(b"\0" * 4096)
PY
echo "build/" > "$repo/.gitignore"
git -C "$repo" init -q
git -C "$repo" add .gitignore
(cd "$repo" && find pkg* -name '*.py' | sort | sed -n 1,1800p | xargs git add)
git -C "$repo" -c user.name=bench -c user.email=bench@example.org commit -qm bench
(cd "$repo" && find pkg* -name '*.py' | sort | sed -n 1,150p | while read -r f; do echo "# edited" >> "$f"; done)
echo "# $(git -C "$repo" ls-files -c -o --exclude-standard | wc -l) files, $(du -sb --exclude=.git --exclude=build "$repo" | cut -f1) bytes; $(git -C "$repo" status --porcelain | wc -l) changed"

for mode in true false; do
  cat > "$work/exp-$mode.yaml" <<YAML
name: bench-snapshot-$mode
entrypoint: "true"
searcher: {name: single, metric: loss}
code: {snapshot: $mode}
YAML
done
printf '#!/bin/bash\nsrun dlx-launch\n' > "$work/job.sh"

submit() {  # prints the seconds sbatch took
  local mode=$1 t0 t1 out
  t0=$(date +%s%N)
  out=$(cd "$repo" && sbatch --parsable -H --output=/dev/null --dl-experiment="$work/exp-$mode.yaml" "$work/job.sh" \
    2> "$work/sbatch.err") || { echo "bench_snapshot: sbatch failed: $(cat "$work/sbatch.err")" >&2; exit 1; }
  t1=$(date +%s%N)
  scancel "${out%%;*}"
  echo "$mode $(( (t1 - t0) / 1000 ))"
}
submit true > /dev/null; submit false > /dev/null  # warm the page cache and sbatch's own start
for ((i = 0; i < repeats; i++)); do
  if [ $((i % 2)) = 0 ]; then submit true; submit false; else submit false; submit true; fi
done > "$work/times.txt"
# The snapshot's own time inside sbatch, as code.json records it, then the directories made above.
/usr/bin/python3 - "$state_dir/storage/$(id -un)" <<'PY'
import glob, json, os, statistics, sys
seconds = [json.load(open(p))["seconds"] for p in glob.glob(os.path.join(sys.argv[1], "bench-snapshot-true*", "code.json"))]
if seconds:
    print(f"# code.json seconds (plan + copy inside sbatch), median of {len(seconds)}: {statistics.median(seconds):.3f} s")
PY
rm -rf "$state_dir/storage/$(id -un)"/bench-snapshot-*

/usr/bin/python3 - "$work/times.txt" <<'PY'
import statistics, sys
times = {"true": [], "false": []}
for line in open(sys.argv[1]):
    mode, micros = line.split()
    times[mode].append(int(micros) / 1e6)
snap, plain = statistics.median(times["true"]), statistics.median(times["false"])
print(f"# sbatch wall time, median of {len(times['true'])}: plain {plain:.3f} s (min {min(times['false']):.3f}), "
      f"with the code snapshot {snap:.3f} s (min {min(times['true']):.3f})")
print(f"# result: sbatch_snapshot_vs_plain {snap / plain:.2f}")
print(f"# result: sbatch_snapshot_added_seconds {snap - plain:.3f} (target <= 0.3)")
PY
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
if [ -x "$build_dir/bin/bench_snapshot_phases" ]; then
  mkdir -p "$work/phases"
  "$build_dir/bin/bench_snapshot_phases" "$repo" "$work/phases" "$repeats" | sed 's/^/# phases: /'
fi
