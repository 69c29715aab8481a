// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Catch2 session every dlx test executable runs (tests/catch_main.cpp, the MPI mains): as
// Catch2's own, except that a test specification that matches no test case fails the run (exit
// status 2, "No test cases matched '...'"), as `-w NoTests` asks, whatever the command line.
// ctest runs one discovered test case per entry by its name; Catch2 alone exits 0 when that name
// matches nothing, so an entry whose name no longer matches its case (a `;` in the name, which
// catch_discover_tests splits into two entries; a case renamed after discovery) would "pass"
// without running a single assertion. Include after <catch2/catch.hpp>, in a file that defines
// CATCH_CONFIG_RUNNER.
#include <catch2/catch.hpp>

namespace dlx::testing {

inline int run_catch_session(int argc, char** argv) {
  Catch::Session session;
  if (const int status = session.applyCommandLine(argc, argv); status != 0) return status;
  auto& config = session.configData();
  config.warnings = static_cast<Catch::WarnAbout::What>(config.warnings | Catch::WarnAbout::NoTests);
  return session.run();
}

}  // namespace dlx::testing
