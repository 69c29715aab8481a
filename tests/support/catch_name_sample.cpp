// SPDX-License-Identifier: Apache-2.0
// Test case names that ctest cannot run by name, on purpose: the sample that
// tests/support/catch_names_test.sh hands to check_catch_names.sh and to Catch2's own discovery.
// Never registered with catch_discover_tests (every real test case name must pass the check).
#include <catch2/catch.hpp>

TEST_CASE("a plain name runs", "[sample]") { CHECK(2 + 2 == 4); }

TEST_CASE("first half; second half", "[sample]") { CHECK(3 + 3 == 6); }

TEST_CASE("a back\\slash", "[sample]") { CHECK(4 + 4 == 8); }

TEST_CASE("~ reads as an exclusion", "[sample]") { CHECK(5 + 5 == 10); }
