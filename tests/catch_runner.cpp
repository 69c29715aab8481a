// SPDX-License-Identifier: Apache-2.0
// Catch2 v2's implementation (its runner, assertion handling and reporters), compiled once for
// every test executable, unit and MPI: the header-only library puts it in whichever file defines
// CATCH_CONFIG_RUNNER, and it is the costliest part of a test executable to compile (~25 s of CPU
// at -O1 with g++ 12). The session every main() runs (support/catch_session.hpp) is here too; the
// main() functions are catch_main.cpp for the unit tests, launcher/mpi_catch_main.cpp and
// launcher/trial_mpi_test.cpp for the MPI tests.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_session.hpp"

namespace dlx::testing {

int run_catch_session(int argc, char** argv) {
  Catch::Session session;
  if (const int status = session.applyCommandLine(argc, argv); status != 0) return status;
  auto& config = session.configData();
  config.warnings = static_cast<Catch::WarnAbout::What>(config.warnings | Catch::WarnAbout::NoTests);
  return session.run();
}

}  // namespace dlx::testing
