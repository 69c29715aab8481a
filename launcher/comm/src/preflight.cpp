#include "dlx/comm/preflight.hpp"

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

void run_check(MPI_Comm comm, std::chrono::milliseconds timeout, const std::string& host) {
  int rank = 0, size = 1;
  DLX_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  DLX_MPI_CHECK(MPI_Comm_size(comm, &size));
  const auto deadline = Clock::now() + timeout;
  const double seconds = static_cast<double>(timeout.count()) / 1000.0;
  const auto n = static_cast<std::size_t>(size);

  // 1-3. hello to rank 0, answer from rank 0
  std::vector<int> hellos(n, 0);
  int hello = 1, answer = 0;
  if (rank == 0) {
    std::vector<MPI_Request> requests(n, MPI_REQUEST_NULL);
    for (int r = 1; r < size; ++r) {
      DLX_MPI_CHECK(MPI_Irecv(&hellos[static_cast<std::size_t>(r)], 1, MPI_INT, r, kHelloTag,
                              comm, &requests[static_cast<std::size_t>(r)]));
    }
    const auto missing = wait_until(requests, deadline);
    if (!missing.empty()) {
      fail(fmt::format(
          "dlx: start-up check failed: rank 0 on {} heard nothing within {:g} s from rank{} {} "
          "(of {} ranks): {} did not start or cannot reach {} ({})",
          host, seconds, missing.size() == 1 ? "" : "s", fmt::join(missing, ", "), size,
          missing.size() == 1 ? "it" : "they", host, kLikelyCauses));
    }
    requests.assign(n, MPI_REQUEST_NULL);
    for (int r = 1; r < size; ++r) {
      DLX_MPI_CHECK(MPI_Isend(&hello, 1, MPI_INT, r, kAnswerTag, comm,
                              &requests[static_cast<std::size_t>(r)]));
    }
    if (!wait_until(requests, deadline).empty()) {
      fail(fmt::format("dlx: start-up check failed: rank 0 on {} could not answer every rank "
                       "within {:g} s ({})", host, seconds, kLikelyCauses));
    }
  } else {
    std::vector<MPI_Request> requests(2, MPI_REQUEST_NULL);
    DLX_MPI_CHECK(MPI_Isend(&hello, 1, MPI_INT, 0, kHelloTag, comm, &requests[0]));
    DLX_MPI_CHECK(MPI_Irecv(&answer, 1, MPI_INT, 0, kAnswerTag, comm, &requests[1]));
    if (!wait_until(requests, deadline).empty()) {
      fail(fmt::format("dlx: start-up check failed: rank {} on {} got no answer from rank 0 "
                       "within {:g} s: rank 0 is unreachable from {}, or another rank is "
                       "missing (see rank 0's message) ({})",
                       rank, host, seconds, host, kLikelyCauses));
    }
  }

  // 4. a tiny collective
  int one = 1, total = 0;
  std::vector<MPI_Request> collective(1, MPI_REQUEST_NULL);
  DLX_MPI_CHECK(MPI_Iallreduce(&one, &total, 1, MPI_INT, MPI_SUM, comm, collective.data()));
  if (!wait_until(collective, deadline).empty()) {
    fail(fmt::format("dlx: start-up check failed: a one-element allreduce over {} ranks did not "
                     "finish within {:g} s on rank {} ({}) ({})",
                     size, seconds, rank, host, kLikelyCauses));
  }
  if (total != size) {
    fail(fmt::format("dlx: start-up check failed: the allreduce counted {} ranks, not {}", total,
                     size));
  }
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
