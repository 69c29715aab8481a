// SPDX-License-Identifier: Apache-2.0
// The start-up check under mpirun -n 2 / -n 3.
//   preflight_mpi_test ok     every rank passes within the deadline
//   preflight_mpi_test late   the last rank arrives 3 s late with a 1 s deadline: rank 0 must fail
//                             within the deadline naming that rank and its own host, and every
//                             rank must fail with the likely settings instead of hanging
// Exits 0 when every rank saw what it should. Finalises MPI itself (the check abandons MPI on
// failure so that a real trainer does not wait for the missing rank in MPI_Finalize).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "dlx/comm/mpi_runtime.hpp"
#include "dlx/comm/preflight.hpp"

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "ok";
  int rank = 0, size = 1, ok = 1;
  {
    dlx::comm::MpiRuntime mpi;
    rank = mpi.rank();
    size = mpi.size();
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    const bool late = mode == "late" && rank == size - 1;
    if (late) std::this_thread::sleep_for(std::chrono::seconds(3));
    const auto start = std::chrono::steady_clock::now();
    try {
      dlx::comm::check_connectivity(MPI_COMM_WORLD, std::chrono::milliseconds(1000), host);
      if (mode != "ok") {
        std::fprintf(stderr, "rank %d: the check passed but a rank was late\n", rank);
        ok = 0;
      }
    } catch (const dlx::comm::PreflightError& error) {
      const std::string what = error.what();
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("rank %d: %s (after %.2f s)\n", rank, what.c_str(), seconds);
      const bool named = rank == 0 ? contains(what, "rank 0 on " + std::string(host)) &&
                                         contains(what, "from rank " + std::to_string(size - 1))
                                   : contains(what, "rank " + std::to_string(rank) + " on " + host);
      if (mode != "late" || !named || !contains(what, "OMPI_MCA_btl_tcp_if_include") ||
          seconds > 2.5) {
        std::fprintf(stderr, "rank %d: unexpected failure\n", rank);
        ok = 0;
      }
    }
    // Let the late rank finish before everyone finalises.
    MPI_Barrier(MPI_COMM_WORLD);
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    ok = all_ok;
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized == 0) MPI_Finalize();
  if (rank == 0) std::printf("preflight %s: %s\n", mode.c_str(), ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
