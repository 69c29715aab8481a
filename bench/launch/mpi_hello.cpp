// SPDX-License-Identifier: Apache-2.0
// bench_mpi_hello: the reference for bench_startup.sh, a bare MPI program under srun: MPI_Init
// (with MPI_THREAD_MULTIPLE, as libdlx asks), a barrier so that every rank is up, and rank 0
// prints the wall-clock time at that moment.
#include <chrono>
#include <cstdio>

#include <mpi.h>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Barrier(MPI_COMM_WORLD);
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    std::printf("first_step_unix_ns %lld\n",
                static_cast<long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()));
    std::fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
