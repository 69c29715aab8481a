// SPDX-License-Identifier: Apache-2.0
// The MPI backend under mpirun -n 2 / -n 3: every rank runs these cases; the process exits
// non-zero when any rank failed any check.
#include <catch2/catch.hpp>

#include <cstdint>
#include <numeric>
#include <vector>

#include "dlx/comm/backends.hpp"
#include "dlx/comm/comm_error.hpp"
#include "dlx/comm/mpi_communicator.hpp"
#include "dlx/comm/mpi_runtime.hpp"

using dlx::comm::CommError;
using dlx::comm::MpiCommunicator;

TEST_CASE("allreduce_sum of doubles and floats", "[mpi]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  const int n = comm.size();
  REQUIRE(n >= 2);
  std::vector<double> values(1000);
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<double>(comm.rank() + 1) * static_cast<double>(i);
  }
  comm.allreduce_sum(std::span<double>(values));
  const double ranks_sum = n * (n + 1) / 2.0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    REQUIRE(values[i] == ranks_sum * static_cast<double>(i));
  }
  std::vector<float> floats(17, static_cast<float>(comm.rank()));
  comm.allreduce_sum(std::span<float>(floats));
  for (float f : floats) REQUIRE(f == static_cast<float>(n * (n - 1) / 2));
  std::vector<double> empty;
  CHECK_NOTHROW(comm.allreduce_sum(std::span<double>(empty)));
}

TEST_CASE("broadcast from any root", "[mpi]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  struct Header {
    std::int64_t step;
    double value;
  };
  for (int root = 0; root < comm.size(); ++root) {
    Header header{comm.rank() == root ? 1000 + root : -1, comm.rank() == root ? 0.5 : 0.0};
    comm.broadcast(std::span<Header>(&header, 1), root);
    CHECK(header.step == 1000 + root);
    CHECK(header.value == 0.5);
  }
  std::vector<std::byte> bytes(300000, std::byte{0});
  if (comm.rank() == comm.size() - 1) std::fill(bytes.begin(), bytes.end(), std::byte{7});
  comm.broadcast(std::span<std::byte>(bytes), comm.size() - 1);
  CHECK(std::all_of(bytes.begin(), bytes.end(), [](std::byte b) { return b == std::byte{7}; }));
  CHECK_NOTHROW(comm.barrier());
}

TEST_CASE("an MPI failure becomes a CommError naming the call", "[mpi]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  int value = 0;
  try {
    comm.broadcast(std::span<int>(&value, 1), comm.size());  // no such root
    FAIL("expected a CommError");
  } catch (const CommError& error) {
    CHECK(error.library() == "MPI");
    CHECK(error.code() != 0);
    CHECK_THAT(error.what(), Catch::Contains("MPI_Bcast") && Catch::Contains("mpi_communicator"));
  }
  comm.barrier();  // still usable afterwards
}

TEST_CASE("without a GPU the backend choice is MPI, the same on every rank", "[mpi]") {
  dlx::comm::BackendOptions options;
  options.announce = false;
  auto comm = dlx::comm::make_communicator(MPI_COMM_WORLD, options);
  CHECK(comm->name() == "mpi");
  double one = 1.0;
  comm->allreduce_sum(std::span<double>(&one, 1));
  CHECK(one == comm->size());

  options.forced = "nccl";  // no GPU here (or no NCCL in the build): refused on every rank
  CHECK_THROWS_AS(dlx::comm::make_communicator(MPI_COMM_WORLD, options), CommError);
  options.forced = "gloo";
  CHECK_THROWS_WITH(dlx::comm::make_communicator(MPI_COMM_WORLD, options),
                    Catch::Contains("DLX_COMM_BACKEND=gloo: no such backend"));
}

TEST_CASE("strings gathered in rank order", "[mpi]") {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  auto all = dlx::comm::allgather_strings(std::string(static_cast<std::size_t>(rank), 'x'),
                                          MPI_COMM_WORLD);
  REQUIRE(all.size() == static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) CHECK(all[static_cast<std::size_t>(r)].size() == static_cast<std::size_t>(r));
}
