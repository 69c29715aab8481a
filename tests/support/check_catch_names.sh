#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_catch_names.sh BINARY: refuses a Catch2 test executable with a test case that ctest cannot
# run by its name. catch_discover_tests (tests/CMakeLists.txt) registers one ctest entry per test
# case, running `BINARY "<name>"`; a name that does not survive that trip gives entries that run
# the wrong cases or none (and Catch2 alone then exits 0: six cases once "passed" that way):
#   ';'                    CMake splits the name into two entries, each matching no case
#   '\', or a leading '"'    Catch2 reads an escape or a quoted name: the entry matches no case
#   a leading '~' or 'exclude:'   Catch2 reads an exclusion: the entry runs every other case
# Run after each link of a discovered test executable (dlx_unit_test), so such a name fails the
# build, naming the case and what to do; tests/support/catch_names_test.sh tests this script.
set -uo pipefail
binary=$1
# --list-test-names-only exits with the number of test cases, so its status says nothing.
names=$("$binary" --list-test-names-only 2>&1)
[ -n "$names" ] || { echo "check_catch_names: $binary lists no test cases: $names" >&2; exit 1; }
bad=0
while IFS= read -r name; do
  why=
  case $name in
    *';'*) why="contains ';', where catch_discover_tests splits it into two ctest entries that match no test case (rename it: e.g. ', and' for ';')" ;;
    *'\'*) why="contains '\\', which Catch2 reads as an escape, so its ctest entry matches no test case (rename it without '\\')" ;;
    '"#'*) ;;  # Catch2 lists a name that starts with '#' quoted, and reads it back so
    '"'*) why="starts with '\"', which Catch2 reads as a quoted name, so its ctest entry matches no test case (rename it)" ;;
    '~'* | exclude:*) why="starts like an exclusion, so its ctest entry would run every other test case instead (rename it)" ;;
  esac
  if [ -n "$why" ]; then
    echo "check_catch_names: $binary: test case \"$name\" $why" >&2
    bad=$((bad + 1))
  fi
done <<< "$names"
[ "$bad" -eq 0 ]
