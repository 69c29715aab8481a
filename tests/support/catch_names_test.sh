#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The guard against test cases that ctest runs under a name that matches nothing (tests.catch_names):
#   1. check_catch_names.sh refuses the sample (catch_name_sample.cpp), naming each bad case and
#      what to do, and accepts a real test executable;
#   2. Catch2's own discovery script (CatchAddTests.cmake, what catch_discover_tests runs after a
#      link) registers the sample, and ctest runs the entries: the two halves of the ';' name and
#      the '\' name fail ("No test cases matched", tests/support/catch_session.hpp) where Catch2
#      alone would have reported them passed; the plain name passes.
# Usage: catch_names_test.sh SAMPLE GOOD_TEST_EXECUTABLE CATCH_ADD_TESTS_SCRIPT
set -uo pipefail
sample=$1 good=$2 add_tests=$3
here=$(dirname "$0")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect_in() {  # expect_in TEXT PART WHAT
  if [[ $1 == *"$2"* ]]; then ok "$3"; else fail "$3: '$2' not in: $1"; fi
}

# 1. The check.
if refused=$(bash "$here/check_catch_names.sh" "$sample" 2>&1); then
  fail "check_catch_names.sh accepted the sample: $refused"
else
  expect_in "$refused" "test case \"first half; second half\" contains ';', where catch_discover_tests splits it into two ctest entries that match no test case (rename it: e.g. ', and' for ';')" "the ';' name refused with what to do"
  expect_in "$refused" "test case \"a back\\slash\" contains '\\', which Catch2 reads as an escape" "the '\\' name refused"
  expect_in "$refused" "test case \"~ reads as an exclusion\" starts like an exclusion, so its ctest entry would run every other test case instead" "the '~' name refused"
  [[ $refused != *"a plain name runs"* ]] && ok "the plain name not refused" || fail "the plain name refused: $refused"
fi
if accepted=$(bash "$here/check_catch_names.sh" "$good" 2>&1); then
  ok "a real test executable passes the check"
else
  fail "check_catch_names.sh refused $good: $accepted"
fi

# 2. Catch2's discovery and ctest, as the build registers a test executable.
mkdir "$work/ctest"
if ! cmake -D "TEST_EXECUTABLE=$sample" -D "TEST_WORKING_DIR=$work" -D "TEST_LIST=sample_TESTS" \
       -D "CTEST_FILE=$work/ctest/sample_tests.cmake" -P "$add_tests" > "$work/discover.log" 2>&1; then
  cat "$work/discover.log"; fail "CatchAddTests.cmake failed on the sample"
fi
echo 'include(sample_tests.cmake)' > "$work/ctest/CTestTestfile.cmake"
ctest --test-dir "$work/ctest" --output-on-failure > "$work/ctest.log" 2>&1
ctest_status=$?
cat "$work/ctest.log"
[ "$ctest_status" -ne 0 ] && ok "ctest fails on the sample" || fail "ctest passed the sample"
result() {  # result NAME: Passed or Failed, as ctest's summary line for the entry NAME says
  grep -E "Test +#[0-9]+: $1 \.+" "$work/ctest.log" | grep -oE 'Passed|Failed' | head -1
}
[ "$(result 'a plain name runs')" = Passed ] && ok "the plain name's entry passes" ||
  fail "the plain name's entry did not pass"
[ "$(result 'first half')" = Failed ] && ok "the entry 'first half' fails" || fail "the entry 'first half' did not fail"
[ "$(result ' second half')" = Failed ] && ok "the entry ' second half' fails" ||
  fail "the entry ' second half' did not fail"
[ "$(result 'a back.slash')" = Failed ] && ok "the '\\' name's entry fails" || fail "the '\\' name's entry did not fail"
expect_in "$(cat "$work/ctest.log")" "No test cases matched 'first half'" "Catch2 says why the first half fails"

# Catch2's exit status for a specification that matches nothing, directly.
"$sample" "no such test case" > "$work/direct.log" 2>&1
status=$?
[ "$status" -eq 2 ] && ok "a specification that matches nothing exits 2" ||
  fail "a specification that matches nothing exited $status: $(cat "$work/direct.log")"

echo "# catch_names_test: $failures failure(s)"
[ "$failures" -eq 0 ]
