#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every C and C++ source of dlx compiled alone, warnings as errors, as the build compiles it but
# without code generation (-fsyntax-only): the check for a missing #include, which the unity build
# of scripts/build.sh hides whenever an earlier file of the same batch includes the header (a
# plain `cmake -S . -B build-dev` build, one object per source, then fails). CI runs it beside
# ctest (scripts/test.sh).
#   bash scripts/compile-check.sh [--unity-build DIR]   DLX_CHECK_JOBS=N compiles at once (nproc)
# --unity-build DIR: a unity build of scripts/build.sh (./build in scripts/test.sh) compiled the
# first source of each of its batches alone already, with these flags: those are left out (a third
# of them), the rest of each batch is compiled here.
# It configures build-check/ with DLX_COMPILE_CHECK=ON (no unity batches, -fsyntax-only added to the
# build's own flags), generates the sources the build generates (protobuf classes, embedded
# assets), then runs the compile command of every C and C++ source in build-check's
# compile_commands.json, each once. Not through ninja: in its graph an object's compile waits for
# the libraries of its target's dependencies, which would be archived and linked, for nothing.
# Exit status 1 when any source does not compile alone or warns, each with the compiler's words.
set -euo pipefail
cd "$(dirname "$0")/.."
unity_build=
case "${1:-}" in
  --unity-build) unity_build=$(realpath "${2:?--unity-build needs the directory of a unity build}") ;;
  "") ;;
  *) echo "compile-check.sh: unknown argument '$1' (usage: bash scripts/compile-check.sh [--unity-build DIR])" >&2; exit 2 ;;
esac
# The configure of scripts/build.sh: the same flags, so the same warnings.
cmake -S . -B build-check -G Ninja -DDLX_WERROR=ON -DDLX_COMPILE_CHECK=ON \
  -DCMAKE_INSTALL_PREFIX=/usr -DDLX_PYTHON_INSTALL_DIR=lib/python3/dist-packages ${DLX_CMAKE_ARGS:-} \
  > build-check.configure.log 2>&1 || { cat build-check.configure.log; exit 1; }
# The generated sources, each by its own command (`-t commands -s`: that step alone; through ninja
# it would wait for the libraries of the targets that own it).
mapfile -t generated < <(ninja -C build-check -t targets all |
  sed -n 's/^\([^/][^:]*\.\(h\|hpp\|c\|cc\|cpp\)\): CUSTOM_COMMAND$/\1/p' | grep -v '^CMakeFiles/')
if [ "${#generated[@]}" -gt 0 ]; then
  for file in "${generated[@]}"; do mkdir -p "build-check/$(dirname "$file")"; done  # as ninja would
  ninja -C build-check -t commands -s "${generated[@]}" | sort -u | bash -e > build-check.generate.log 2>&1 ||
    { cat build-check.generate.log; echo "compile-check: generating the sources failed" >&2; exit 1; }
fi
python3 - "${DLX_CHECK_JOBS:-$(nproc)}" "$unity_build" <<'PYTHON'
import glob, json, os, re, shlex, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor

def compiled_alone_by(unity_build):
    """The sources a unity build compiled alone: the first #include of each of its unity files
    (the rest of a batch compiles after the files before it, whose #includes it may be using)."""
    if not unity_build:
        return set()
    first = set()
    for unity in glob.glob(os.path.join(unity_build, "**", "Unity", "unity_*"), recursive=True):
        if not re.search(r"/unity_[0-9]+_(cxx\.cxx|c\.c)$", unity):
            continue  # the objects and depfiles beside them
        with open(unity) as f:
            included = re.search(r'^#include "([^"]+)"', f.read(), re.MULTILINE)
        if included:
            first.add(os.path.realpath(included.group(1)))
    if not first:
        sys.exit(f"compile-check: {unity_build} has no unity batches (not a build of scripts/build.sh?)")
    return first

def alone(entry):
    """The entry's compile command without its outputs (-o, the -MD depfile): nothing is written."""
    args, out, skip = shlex.split(entry["command"]), [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-o", "-MT", "-MF"):
            skip = True
        elif arg != "-MD":
            out.append(arg)
    return out

with open("build-check/compile_commands.json") as f:
    entries = [e for e in json.load(f) if e["file"].endswith((".c", ".cc", ".cpp"))]
skipped = compiled_alone_by(sys.argv[2])
commands = {}  # a source compiled the same way for several targets is compiled once
for entry in entries:
    if os.path.realpath(entry["file"]) not in skipped:
        commands.setdefault((entry["directory"], tuple(alone(entry))), entry["file"])

def compile_one(item):
    (directory, args), source = item
    result = subprocess.run(args, cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return source, result.returncode, result.stdout

start, failed = time.monotonic(), []
with ThreadPoolExecutor(max_workers=int(sys.argv[1])) as pool:
    for source, status, output in pool.map(compile_one, commands.items()):
        if status != 0 or output.strip():
            failed.append(source)
            print(f"compile-check: {source} does not compile alone without a warning:\n{output}", flush=True)
seconds = round(time.monotonic() - start)
if failed:
    print(f"# compile-check: {len(failed)} of {len(commands)} sources failed alone, in {seconds} s:\n"
          + "\n".join(f"#   {source}" for source in failed))
    sys.exit(1)
already = f" ({len(skipped)} more compiled alone by the unity build)" if skipped else ""
print(f"# compile-check: {len(commands)} sources compiled alone, warnings as errors, in {seconds} s{already}")
PYTHON
