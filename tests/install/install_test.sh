#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `cmake --install` of this build into a staged tree (DESTDIR, prefix /opt/dlx), then what a
# sysadmin and a user rely on there (docs/admin-guide.md "Installed layout", docs/sdk.md):
#   - the plugin in the Slurm plugin directory, and the plugstack snippet naming that path;
#   - libdlx.so and libdlx_c.so with their SONAME and symlink chain;
#   - `import dlx` with PYTHONPATH at the installed package, DLX_LIBRARY unset, finds the
#     installed libdlx_c; dlx-launch puts that package on its child's PYTHONPATH;
#   - an out-of-tree project builds and runs with find_package(dlx) (dlx::sdk, dlx::c), and the
#     same sources with pkg-config dlx / dlx-c.
# Usage: install_test.sh BUILD_DIR CONSUMER_SOURCE_DIR PLUGINDIR LIBDIR PYTHON_DIR SDK_SONAME CC CXX
set -euo pipefail
build=$1 consumer=$2 plugindir=$3 libdir=$4 pythondir=$5 sdk_soname=$6 cc=$7 cxx=$8
prefix=/opt/dlx
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/stage
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
under_prefix() { case $1 in /*) echo "$1" ;; *) echo "$prefix/$1" ;; esac; }

DESTDIR=$stage cmake --install "$build" --prefix "$prefix" > "$work/install.log" ||
  { cat "$work/install.log"; exit 1; }
root=$stage$prefix
lib=$stage$(under_prefix "$libdir")

# The programs.
for program in dlx dlx-launch; do
  [ -x "$root/bin/$program" ] && ok "bin/$program" || fail "$root/bin/$program missing"
done

# The plugin and its plugstack line.
plugin=$(under_prefix "$plugindir")/dlx_spank.so
[ -f "$stage$plugin" ] && ok "plugin at $plugin" || fail "no plugin at $stage$plugin"
snippet=$root/share/dlx/plugstack.conf.d/dlx.conf
if grep -qx "optional $plugin storage_root=/shared/dlx" "$snippet"; then
  ok "$snippet names $plugin"
else
  fail "$snippet does not name $plugin:"; cat "$snippet" || true
fi
# `dlx cluster` (tests/cluster/setup.sh runs it from an installed prefix) hands the installed
# plugin to its script: a stand-in script prints what it got.
cp "$root/libexec/dlx/dlx-cluster" "$work/dlx-cluster.installed"
printf 'echo "$DLX_PLUGIN"\n' > "$root/libexec/dlx/dlx-cluster"
given=$(env -u DLX_PLUGIN "$root/bin/dlx" cluster status) || given="(failed)"
case $plugindir in /*) wanted=$plugin ;; *) wanted=$stage$plugin ;; esac  # moves with the prefix
[ "$given" = "$wanted" ] && ok "dlx cluster uses $given" ||
  fail "dlx cluster gave its script DLX_PLUGIN=$given, expected $wanted"
cp "$work/dlx-cluster.installed" "$root/libexec/dlx/dlx-cluster"
[ -f "$root/share/dlx/site-config/plugstack.conf.example" ] && ok "site-config" ||
  fail "no $root/share/dlx/site-config/plugstack.conf.example"

# The examples: the installed dlx accepts the installed grid experiment.
if out=$("$root/bin/dlx" validate "$root/share/dlx/examples/grid.yaml" 2>&1); then
  ok "dlx validate share/dlx/examples/grid.yaml: ${out##*: }"
else
  fail "installed grid example: $out"
fi
[ -x "$root/share/dlx/examples/job.sh" ] && [ -f "$root/share/dlx/examples/pytorch/ddp.py" ] ||
  fail "examples/job.sh or examples/pytorch/ddp.py not installed"

# Man pages (from --help) and module files: loaded by stand-ins for Lmod's and Environment
# Modules' functions, they put the installed bin/ first on PATH.
for page in dlx dlx-launch; do
  grep -q "^\.SH NAME" "$root/share/man/man1/$page.1" 2>/dev/null && ok "man page $page.1" ||
    fail "no man page $root/share/man/man1/$page.1"
done
grep -q '^\.SH "dlx validate"' "$root/share/man/man1/dlx.1" || fail "dlx.1 lacks dlx validate's help"
modules=$root/share/dlx/modulefiles/dlx
version=$(cd "$modules" && ls | grep -v '\.lua$' | head -1)
if ! command -v lua > /dev/null || ! command -v tclsh > /dev/null; then
  fail "lua and tclsh are needed to read the module files (scripts/install-deps.sh installs them)"
fi
path=$(lua -e 'function prepend_path(k, v) if k == "PATH" then print(v) end end
               function help() end function whatis() end' "$modules/$version.lua" 2>&1) || true
[ "$path" = "$prefix/bin" ] && ok "Lmod module $version.lua: PATH $path" ||
  fail "Lmod module $modules/$version.lua: PATH '$path', expected $prefix/bin"
path=$(printf '%s\n' 'proc prepend-path {k v} { if {$k eq "PATH"} { puts $v } }' \
         'proc module-whatis {args} {}' "source {$modules/$version}" | tclsh 2>&1) || true
[ "$path" = "$prefix/bin" ] && ok "Tcl module $version: PATH $path" ||
  fail "Tcl module $modules/$version: PATH '$path', expected $prefix/bin"

# Shared libraries: file -> SONAME -> real file, and the SONAME inside.
check_chain() {  # NAME SONAME
  local link target
  link=$(readlink "$lib/$1") || { fail "$lib/$1 is not a symbolic link"; return; }
  [ "$link" = "$2" ] || fail "$1 -> $link, expected $2"
  target=$(readlink "$lib/$2") || { fail "$lib/$2 is not a symbolic link"; return; }
  [ -f "$lib/$target" ] || fail "$2 -> $target, which is missing"
  readelf -d "$lib/$target" | grep -q "Library soname: \[$2\]" || fail "$target's SONAME is not $2"
  ok "$1 -> $2 -> $target"
}
check_chain libdlx_c.so libdlx_c.so.0
check_chain libdlx.so "$sdk_soname"

# Python: the installed package finds the installed library by itself.
python_dir=$stage$(under_prefix "$pythondir")
found=$(cd "$work" && env -u DLX_LIBRARY PYTHONPATH="$python_dir" /usr/bin/python3 -c \
  'import os, dlx, dlx._library as l, dlx._installed as i; l.library(); print(dlx.__file__)
print(l._library_path()); print(os.path.join(os.path.dirname(dlx.__file__), i.LIBRARY))') ||
  fail "import dlx with PYTHONPATH=$python_dir"
expected=$(readlink -f "$lib/libdlx_c.so.0")
# Loaded, and named by the path cmake --install wrote into the package (dlx/_installed.py).
if [ "$(sed -n 1p <<< "$found")" = "$python_dir/dlx/__init__.py" ] &&
   [ "$(readlink -f "$(sed -n 2p <<< "$found")")" = "$expected" ] &&
   [ "$(readlink -f "$(sed -n 3p <<< "$found")")" = "$expected" ]; then
  ok "import dlx loads $expected"
else
  fail "import dlx: expected the package in $python_dir and $expected, got: $found"
fi
if [ "$pythondir" = lib/dlx/python ]; then  # dlx-launch's own directory: it sets PYTHONPATH
  path=$(cd "$work" && env -u DLX_EXPERIMENT_DIR -u PYTHONPATH "$root/bin/dlx-launch" -- \
         /usr/bin/python3 -c 'import os; print(os.environ["PYTHONPATH"])') || path="(failed)"
  [ "$path" = "$python_dir" ] && ok "dlx-launch sets PYTHONPATH=$path" ||
    fail "dlx-launch set PYTHONPATH=$path, expected $python_dir"
fi

# An out-of-tree project, with find_package(dlx) and with pkg-config (the .pc files name /opt/dlx).
. "$consumer/check_consumers.sh"
check_consumers "$root" "$lib" "$stage" "$cc" "$cxx"

echo "# install_test: $failures failure(s)"
[ "$failures" -eq 0 ]
