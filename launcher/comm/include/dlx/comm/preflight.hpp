// SPDX-License-Identifier: Apache-2.0
#pragma once
// The start-up check libdlx runs before training: can every rank reach every other one? A rank
// that cannot connect would otherwise hang the first collective forever. The check has a hard
// deadline and, when it fails, says which rank is missing, on which host the waiting rank runs,
// and what to check. Protocol (non-blocking calls only, polled against one deadline, so nothing
// here can block past it; directly on `world`, because MPI_Comm_dup is itself a blocking
// collective that would wait for the missing rank; `world` must have MPI_ERRORS_RETURN):
//
//   1. Every rank r > 0 sends rank 0 a one-int "hello" (MPI_Isend) and posts a receive for
//      rank 0's answer. Rank 0 posts a receive from every rank.
//   2. Rank 0 polls (MPI_Testsome) until every hello arrived or the deadline passed. If one is
//      missing it fails, naming the missing ranks: they did not start, or cannot reach rank 0.
//   3. Rank 0 answers every rank; each rank polls for its answer with the same deadline (no
//      answer: rank 0 is unreachable from this host, or failed).
//   4. All ranks run a one-element MPI_Iallreduce, polled against the deadline: the collective
//      path between all pairs works.
// On failure the requests are left pending and abandon_mpi() makes the exit skip MPI_Finalize
// (which would wait for the missing peer), then PreflightError is thrown.
#include <chrono>
#include <string>

#include <mpi.h>

#include "dlx/comm/comm_error.hpp"

namespace dlx::comm {

class PreflightError : public CommError {
 public:
  explicit PreflightError(const std::string& message) : CommError("dlx", 0, message) {}
};

// Collective over `world`. Throws PreflightError (after `timeout`) or CommError.
void check_connectivity(MPI_Comm world, std::chrono::milliseconds timeout,
                        const std::string& host);

}  // namespace dlx::comm
