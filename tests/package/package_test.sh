#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian packages of a build tree (ctest package.debs): scripts/package.sh --no-build into a
# temporary directory, once as a site builds them (five packages) and once with --portable of a
# stand-in library (refused when it is not portable or not this dlx's, packaged as
# libdlx-c0-portable otherwise); then, of the second,
#   - lintian: no error or warning (the overrides in debian/*.lintian-overrides say why);
#   - which package holds what, at the paths docs/admin-guide.md names;
#   - the plugin package's version names the Slurm it was built against and depends on that
#     Slurm release; the libraries' SONAMEs match their packages' names;
#   - unpacked (dpkg-deb -x) into one directory: `import dlx` loads the unpacked libdlx_c, the
#     unpacked dlx validates the unpacked grid example, and the consumer project builds against
#     the unpacked libdlx-dev with find_package(dlx) and pkg-config.
# Usage: package_test.sh SOURCE_DIR BUILD_DIR CONSUMER_DIR
set -euo pipefail
source_dir=$1 build=$2 consumer=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

if ! grep -qx 'CMAKE_INSTALL_PREFIX:PATH=/usr' "$build/CMakeCache.txt"; then
  echo "package_test: $build is not configured with the Debian layout (scripts/build.sh): skipped"
  exit 77
fi
# make_packages OUT [ARGS...]: scripts/package.sh --no-build ARGS into OUT.
make_packages() { local out=$1; shift
                  DEB_BUILD_OPTIONS=noautodbgsym DLX_PACKAGE_BUILD_DIR=$build DLX_PACKAGE_OUT=$out \
                    bash "$source_dir/scripts/package.sh" --no-build "$@"; }
# Without --portable (what most sites build): the five packages, no libdlx-c0-portable.
start=$SECONDS
make_packages "$work/plain" > "$work/plain.log" 2>&1 ||
  { cat "$work/plain.log"; echo "FAIL: scripts/package.sh without --portable"; exit 1; }
plain=$(cd "$work/plain" && ls *.deb | sed 's/_.*//' | sort | tr '\n' ' ')
[ "$plain" = "dlx libdlx-c0 libdlx-dev libdlx0.1 slurm-spank-plugin-dlx " ] &&
  ok "scripts/package.sh without --portable in $((SECONDS - start)) s: $plain" ||
  fail "scripts/package.sh without --portable made: $plain"
rm -rf "$work/plain" "$work/plain.work"
# --portable refuses, before anything is built, a library that is not portable (the build's own:
# Open MPI, libstdc++, glibc 2.34) and one that is not this dlx's (another C API).
lib_c=$(readlink -f "$build/lib/libdlx_c.so.0")
if out=$(make_packages "$work/dist" --portable "$lib_c" 2>&1); then
  fail "package.sh --portable took the build's own libdlx_c: $out"
else
  [[ $out == *"is not a portable libdlx_c"* && $out == *"libmpi"* && $out == *"scripts/portable-c.sh"* ]] &&
    ok "package.sh --portable refuses the build's libdlx_c, saying why" || fail "package.sh --portable's message: $out"
fi
out=$(make_packages "$work/dist" --portable "$work/absent/libdlx_c.so.0" 2>&1) &&
  fail "package.sh --portable took a file that does not exist: $out"
[[ $out == *"$work/absent/libdlx_c.so.0: no such file (build it with bash scripts/portable-c.sh)"* ]] &&
  ok "package.sh --portable of a missing file says so" || fail "package.sh --portable's message for a missing file: $out"
[ ! -e "$work/dist" ] || fail "package.sh --portable of a library it refused wrote $work/dist"
# The stand-in for the portable library: a library of glibc alone with this build's exports (the
# real one takes a debootstrap root and minutes: scripts/portable-c.sh; its own checks run there).
exports=$(nm -D --defined-only "$lib_c" | awk '$2 == "T" && $3 ~ /^dlx_/ { print $3 }')
mkdir -p "$work/portable"
{ echo "#include <stdlib.h>"; for name in $exports; do echo "void $name(void) { abort(); }"; done; } > "$work/portable/stand_in.c"
cc -shared -fPIC -O2 -Wl,-soname,libdlx_c.so.0 -Wl,-z,relro,-z,now -o "$work/portable/libdlx_c.so.0" \
  "$work/portable/stand_in.c"
echo "void dlx_from_another_release(void) { abort(); }" >> "$work/portable/stand_in.c"
cc -shared -fPIC -O2 -Wl,-soname,libdlx_c.so.0 -o "$work/portable/other.so" "$work/portable/stand_in.c"
if out=$(make_packages "$work/dist" --portable "$work/portable/other.so" 2>&1); then
  fail "package.sh --portable took a library with another C API: $out"
else
  [[ $out == *"exports another C API"* && $out == *"only in the portable one: dlx_from_another_release"* ]] &&
    ok "package.sh --portable refuses another dlx's library, naming the difference" ||
    fail "package.sh --portable's message for another C API: $out"
fi

start=$SECONDS
# No -dbgsym packages: compressing their debug information would take most of the test's time.
make_packages "$work/dist" --portable "$work/portable/libdlx_c.so.0" > "$work/package.log" 2>&1 ||
  { cat "$work/package.log"; echo "FAIL: scripts/package.sh"; exit 1; }
ok "scripts/package.sh --portable in $((SECONDS - start)) s"
deb() { ls "$work"/dist/"$1"_*.deb; }
for package in dlx slurm-spank-plugin-dlx libdlx0.1 libdlx-c0 libdlx-dev libdlx-c0-portable; do
  deb "$package" > /dev/null 2>&1 || fail "no $package package in $(ls "$work/dist")"
done
[ "$failures" -eq 0 ] || exit 1

start=$SECONDS
if lintian --fail-on error,warning --display-info --tag-display-limit 0 "$work"/dist/*.deb > "$work/lintian.log" 2>&1; then
  ok "lintian: no error or warning ($((SECONDS - start)) s)"
else
  cat "$work/lintian.log"; fail "lintian"
fi
# A build with DLX_HARDENING (cmake/DlxCompilerSettings.cmake: Debian's hardening=+all flags)
# leaves lintian's hardening checks (informational tags) nothing to report.
if grep -qx 'DLX_HARDENING:BOOL=ON' "$build/CMakeCache.txt"; then
  hardening=$(grep -E ': hardening-' "$work/lintian.log" || true)
  [ -z "$hardening" ] && ok "lintian: no hardening-* tag" || fail "lintian, with DLX_HARDENING=ON: $hardening"
fi

# Which package holds what.
has() {  # PACKAGE PATH...
  local package=$1 path; shift
  dpkg-deb --contents "$(deb "$package")" | awk '{print $6}' | sed 's|^\.||' > "$work/contents"
  for path; do
    grep -qx "$path" "$work/contents" && ok "$package: $path" || fail "$package lacks $path"
  done
}
has dlx /usr/bin/dlx /usr/bin/dlx-launch /usr/bin/dlx-example-logreg /usr/libexec/dlx/dlx-cluster \
  /usr/lib/python3/dist-packages/dlx/__init__.py /usr/lib/python3/dist-packages/dlx/_installed.py \
  /usr/share/dlx/examples/grid.yaml /usr/share/dlx/site-config/job_submit.lua \
  /usr/share/man/man1/dlx.1.gz /usr/share/man/man1/dlx-launch.1.gz
has slurm-spank-plugin-dlx "/usr/lib/$multiarch/slurm-wlm/dlx_spank.so" \
  /usr/share/dlx/plugstack.conf.d/dlx.conf
has libdlx0.1 "/usr/lib/$multiarch/libdlx.so.0.1"
has libdlx-c0 "/usr/lib/$multiarch/libdlx_c.so.0"
has libdlx-c0-portable "/usr/lib/$multiarch/dlx/container/libdlx_c.so.0"
portable_depends=$(dpkg-deb -f "$(deb libdlx-c0-portable)" Depends)
[[ $portable_depends == *"dlx (= $(dpkg-deb -f "$(deb dlx)" Version))"* ]] &&
  ok "libdlx-c0-portable depends on its dlx: $portable_depends" ||
  fail "libdlx-c0-portable Depends: $portable_depends (expected dlx of the same version)"
has libdlx-dev /usr/include/dlx/trial.hpp /usr/include/dlx/c_api.h "/usr/lib/$multiarch/libdlx.so" \
  "/usr/lib/$multiarch/libdlx_c.so" "/usr/lib/$multiarch/cmake/dlx/dlxConfig.cmake" \
  "/usr/lib/$multiarch/pkgconfig/dlx.pc" "/usr/lib/$multiarch/pkgconfig/dlx-c.pc"

# The plugin package and the Slurm it was built against.
slurm_include=$(sed -n 's/^SLURM_INCLUDE_DIR:[A-Z]*=//p' "$build/CMakeCache.txt")
slurm=$("$source_dir/debian/slurm-version" "$slurm_include")
series=${slurm%.*}
version=$(dpkg-deb -f "$(deb slurm-spank-plugin-dlx)" Version)
depends=$(dpkg-deb -f "$(deb slurm-spank-plugin-dlx)" Depends)
[[ $version == *+slurm$slurm ]] && ok "plugin version $version" ||
  fail "plugin version $version does not end in +slurm$slurm"
[[ $depends == *"slurm-wlm-basic-plugins (>= $series)"* && $depends == *"slurm-wlm-basic-plugins (<< "* ]] &&
  ok "plugin depends on Slurm $series: $depends" || fail "plugin Depends: $depends (expected Slurm $series)"
dlx_version=$(dpkg-deb -f "$(deb dlx)" Version)
[[ $depends == *"dlx (= $dlx_version)"* ]] || fail "plugin Depends: $depends lacks dlx (= $dlx_version)"

# SONAMEs and package names (Debian policy 8.1), and the libraries' shlibs files.
for pair in libdlx0.1:libdlx.so.0.1 libdlx-c0:libdlx_c.so.0; do
  package=${pair%%:*} soname=${pair#*:}
  dpkg-deb -x "$(deb "$package")" "$work/lib-$package"
  readelf -d "$work/lib-$package/usr/lib/$multiarch/$soname" | grep -q "Library soname: \[$soname\]" &&
    ok "$package: SONAME $soname" || fail "$package: $soname's SONAME is not $soname"
  dpkg-deb --ctrl-tarfile "$(deb "$package")" | tar -xO ./shlibs 2> /dev/null | grep -q "$package" ||
    fail "$package has no shlibs file naming itself"
done

# Unpacked into one root: the programs, the Python module, the SDK.
root=$work/root
for file in "$work"/dist/*.deb; do dpkg-deb -x "$file" "$root"; done
lib=$root/usr/lib/$multiarch
out=$(cd "$work" && LD_LIBRARY_PATH=$lib "$root/usr/bin/dlx" validate "$root/usr/share/dlx/examples/grid.yaml" 2>&1) &&
  ok "unpacked dlx validates the unpacked grid.yaml" || fail "dlx validate grid.yaml: $out"
found=$(cd "$work" && env -u DLX_LIBRARY PYTHONPATH=$root/usr/lib/python3/dist-packages /usr/bin/python3 -c \
  'import dlx, dlx._library as l; l.library(); print(l._library_path())' 2>&1) || true
[ "$(readlink -f "$found")" = "$(readlink -f "$lib/libdlx_c.so.0")" ] && ok "import dlx loads $found" ||
  fail "import dlx: $found (expected $lib/libdlx_c.so.0)"
. "$consumer/check_consumers.sh"
check_consumers "$root/usr" "$lib" "$root" cc c++

echo "# package_test: $failures failure(s)"
[ "$failures" -eq 0 ]
