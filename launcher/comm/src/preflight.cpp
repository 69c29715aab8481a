// SPDX-License-Identifier: Apache-2.0
#include "dlx/comm/preflight.hpp"

#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dlx/comm/mpi_check.hpp"
#include "dlx/comm/mpi_runtime.hpp"

namespace dlx::comm {

namespace {

constexpr int kHelloTag = 0x646c;  // "dl"
constexpr int kAnswerTag = 0x646d;

using Clock = std::chrono::steady_clock;

// What usually makes a rank unreachable, for every failure message.
constexpr const char* kLikelyCauses =
    "check that every rank of the step started (srun ... dlx-launch, the same -n everywhere), "
    "that the nodes can reach each other on the interface MPI uses (OMPI_MCA_btl_tcp_if_include / "
    "OMPI_MCA_btl_tcp_if_exclude; NCCL_SOCKET_IFNAME for NCCL; `lo` is skipped by default), and "
    "that no firewall blocks the ports between them; if start-up is only slow, raise "
    "DLX_COMM_TIMEOUT_S";

// Polls `requests` until all completed or `deadline`. Returns the indices still pending.
std::vector<int> wait_until(std::vector<MPI_Request>& requests, Clock::time_point deadline) {
  std::vector<int> done(requests.size());
  while (true) {
    int pending = 0;
    for (const auto& request : requests) pending += request != MPI_REQUEST_NULL ? 1 : 0;
    if (pending == 0) return {};
    int count = 0;
    DLX_MPI_CHECK(MPI_Testsome(static_cast<int>(requests.size()), requests.data(), &count,
                               done.data(), MPI_STATUSES_IGNORE));
    if (count > 0 && count != MPI_UNDEFINED) continue;
    if (Clock::now() > deadline) {
      std::vector<int> missing;
      for (std::size_t i = 0; i < requests.size(); ++i) {
        if (requests[i] != MPI_REQUEST_NULL) missing.push_back(static_cast<int>(i));
      }
      return missing;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

[[noreturn]] void fail(const std::string& what) {
  abandon_mpi();
  throw PreflightError(what);
}

// One start-up check's communicator, who this rank is and when it gives up.
struct Check {
  MPI_Comm comm;
  int rank = 0;
  int size = 1;
  Clock::time_point deadline;
  double seconds = 0;  // the timeout, for messages
  std::string host;
};

// Steps 1-3 on rank 0: a hello from every other rank, then an answer to each.
void hear_every_rank(const Check& check) {
  const auto n = static_cast<std::size_t>(check.size);
  std::vector<int> hellos(n, 0);
  int hello = 1;
  std::vector<MPI_Request> requests(n, MPI_REQUEST_NULL);
  for (int r = 1; r < check.size; ++r) {
    DLX_MPI_CHECK(MPI_Irecv(&hellos[static_cast<std::size_t>(r)], 1, MPI_INT, r, kHelloTag, check.comm,
                            &requests[static_cast<std::size_t>(r)]));
  }
  const auto missing = wait_until(requests, check.deadline);
  if (!missing.empty()) {
    fail(fmt::format(
        "dlx: start-up check failed: rank 0 on {} heard nothing within {:g} s from rank{} {} "
        "(of {} ranks): {} did not start or cannot reach {} ({})",
        check.host, check.seconds, missing.size() == 1 ? "" : "s", fmt::join(missing, ", "), check.size,
        missing.size() == 1 ? "it" : "they", check.host, kLikelyCauses));
  }
  requests.assign(n, MPI_REQUEST_NULL);
  for (int r = 1; r < check.size; ++r) {
    DLX_MPI_CHECK(MPI_Isend(&hello, 1, MPI_INT, r, kAnswerTag, check.comm, &requests[static_cast<std::size_t>(r)]));
  }
  if (!wait_until(requests, check.deadline).empty()) {
    fail(fmt::format("dlx: start-up check failed: rank 0 on {} could not answer every rank "
                     "within {:g} s ({})", check.host, check.seconds, kLikelyCauses));
  }
}

// Steps 1-3 on the other ranks: a hello to rank 0, and its answer.
void reach_rank0(const Check& check) {
  int hello = 1, answer = 0;
  std::vector<MPI_Request> requests(2, MPI_REQUEST_NULL);
  DLX_MPI_CHECK(MPI_Isend(&hello, 1, MPI_INT, 0, kHelloTag, check.comm, &requests[0]));
  DLX_MPI_CHECK(MPI_Irecv(&answer, 1, MPI_INT, 0, kAnswerTag, check.comm, &requests[1]));
  if (!wait_until(requests, check.deadline).empty()) {
    fail(fmt::format("dlx: start-up check failed: rank {} on {} got no answer from rank 0 "
                     "within {:g} s: rank 0 is unreachable from {}, or another rank is "
                     "missing (see rank 0's message) ({})",
                     check.rank, check.host, check.seconds, check.host, kLikelyCauses));
  }
}

// Step 4: a tiny collective.
void sum_over_ranks(const Check& check) {
  int one = 1, total = 0;
  std::vector<MPI_Request> collective(1, MPI_REQUEST_NULL);
  DLX_MPI_CHECK(MPI_Iallreduce(&one, &total, 1, MPI_INT, MPI_SUM, check.comm, collective.data()));
  if (!wait_until(collective, check.deadline).empty()) {
    fail(fmt::format("dlx: start-up check failed: a one-element allreduce over {} ranks did not "
                     "finish within {:g} s on rank {} ({}) ({})",
                     check.size, check.seconds, check.rank, check.host, kLikelyCauses));
  }
  if (total != check.size) {
    fail(fmt::format("dlx: start-up check failed: the allreduce counted {} ranks, not {}", total,
                     check.size));
  }
}

void run_check(MPI_Comm comm, std::chrono::milliseconds timeout, const std::string& host) {
  Check check{.comm = comm, .rank = 0, .size = 1, .deadline = Clock::now() + timeout,
              .seconds = static_cast<double>(timeout.count()) / 1000.0, .host = host};
  DLX_MPI_CHECK(MPI_Comm_rank(comm, &check.rank));
  DLX_MPI_CHECK(MPI_Comm_size(comm, &check.size));
  if (check.rank == 0) {
    hear_every_rank(check);
  } else {
    reach_rank0(check);
  }
  sum_over_ranks(check);
}

}  // namespace

void check_connectivity(MPI_Comm world, std::chrono::milliseconds timeout,
                        const std::string& host) {
  try {
    run_check(world, timeout, host);
  } catch (const PreflightError&) {
    throw;
  } catch (const CommError& error) {
    // MPI itself reported the problem (e.g. no usable route between two nodes).
    fail(fmt::format("dlx: start-up check failed on {}: {} ({})", host, error.what(),
                     kLikelyCauses));
  }
}

}  // namespace dlx::comm
