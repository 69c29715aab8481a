# SPDX-License-Identifier: Apache-2.0
# Sourced by tests/install/install_test.sh (a staged `cmake --install`) and
# tests/package/package_test.sh (the unpacked Debian packages), which define ok, fail and $work.
# check_consumers PREFIX LIB SYSROOT CC CXX: builds this project against the dlx installed in
# PREFIX twice, with find_package(dlx) and with pkg-config (LIB/pkgconfig, whose .pc files name
# the prefix of the install step: PKG_CONFIG_SYSROOT_DIR=SYSROOT maps it), and runs both programs
# of each build with LIB on LD_LIBRARY_PATH.
check_consumers() {
  local prefix=$1 lib=$2 sysroot=$3 cc=$4 cxx=$5
  local consumer
  consumer=$(dirname "${BASH_SOURCE[0]}")
  if cmake -S "$consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
       -DCMAKE_CXX_COMPILER="$cxx" > "$work/consumer.log" 2>&1 &&
     cmake --build "$work/cmake" >> "$work/consumer.log" 2>&1; then
    run_consumer_programs find_package "$work/cmake" "$lib"
  else
    cat "$work/consumer.log"; fail "the find_package(dlx) project does not build against $prefix"
  fi
  local -x PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$sysroot
  mkdir -p "$work/pc"
  # dlx's C++ headers need C++20, which g++ 12 does not default to: dlx.pc's Cflags say so, and the
  # C++ consumer is compiled with no -std of its own.
  local cxxflags
  cxxflags=$(pkg-config --cflags dlx)
  [[ " $cxxflags " == *" -std=c++20 "* ]] && ok "pkg-config --cflags dlx: $cxxflags" ||
    fail "pkg-config --cflags dlx has no -std=c++20: $cxxflags"
  # shellcheck disable=SC2046  # pkg-config's flags are words
  if "$cc" -o "$work/pc/consumer_c" "$consumer/consumer.c" $(pkg-config --cflags --libs dlx-c) &&
     "$cxx" -o "$work/pc/consumer_cpp" "$consumer/consumer.cpp" $(pkg-config --cflags --libs dlx); then
    run_consumer_programs pkg-config "$work/pc" "$lib"
  else
    fail "pkg-config dlx / dlx-c: $(pkg-config --cflags --libs dlx dlx-c 2>&1)"
  fi
}

run_consumer_programs() {  # HOW DIR LIB
  local program out
  for program in consumer_cpp consumer_c; do
    if out=$(cd "$work" && DLX_HPARAMS='{"lr": 0.25}' LD_LIBRARY_PATH="$3" "$2/$program" 2>&1); then
      ok "$1: $out"
    else
      fail "$1: $program: $out"
    fi
  done
}
