// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Catch2 session every dlx test executable runs (tests/catch_main.cpp, the MPI mains): as
// Catch2's own, except that a test specification that matches no test case fails the run (exit
// status 2, "No test cases matched '...'"), as `-w NoTests` asks, whatever the command line.
// ctest runs one discovered test case per entry by its name; Catch2 alone exits 0 when that name
// matches nothing, so an entry whose name no longer matches its case (a `;` in the name, which
// catch_discover_tests splits into two entries; a case renamed after discovery) would "pass"
// without running a single assertion. Defined in tests/catch_runner.cpp, with Catch2's
// implementation (Catch::Session is declared only where CATCH_CONFIG_RUNNER is).

namespace dlx::testing {

int run_catch_session(int argc, char** argv);

}  // namespace dlx::testing
