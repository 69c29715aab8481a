// SPDX-License-Identifier: Apache-2.0
// The main() of the MPI tests that need only MPI itself (comm, fusion): every rank runs
// the cases, and the run fails on every rank when it failed on any, so mpirun's exit status is
// the same whichever rank it reports; a test specification that matches no test case fails the
// run (tests/support/catch_session.hpp). Catch2's implementation is tests/catch_runner.cpp.
#include <mpi.h>

#include "catch_session.hpp"
#include "dlx/comm/mpi_runtime.hpp"

int main(int argc, char** argv) {
  dlx::comm::MpiRuntime mpi;
  const int failed = dlx::testing::run_catch_session(argc, argv) == 0 ? 0 : 1;
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any_failed;
}
