// SPDX-License-Identifier: Apache-2.0
#pragma once
// MPI's lifetime for a process that may or may not have initialised MPI itself: initialises when
// nobody did yet, asking for MPI_THREAD_MULTIPLE (the MPI backend's non-blocking collectives run
// on a background thread), and then finalises in the destructor; sets MPI_ERRORS_RETURN on
// MPI_COMM_WORLD so that DLX_MPI_CHECK sees failures instead of the job aborting.
// After abandon_mpi() (a peer never answered: MPI_Finalize would wait for it forever) the
// destructor leaves MPI as it is and the process exits without finalising.
#include <string>
#include <vector>

#include <mpi.h>

namespace dlx::comm {

class MpiRuntime {
 public:
  MpiRuntime();  // throws CommError
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }

 private:
  bool owns_ = false;
  int rank_ = 0;
  int size_ = 1;
};

// Called when a peer may never join again: the runtime then skips MPI_Finalize at exit.
void abandon_mpi() noexcept;
bool mpi_abandoned() noexcept;  // whether abandon_mpi() was called (collective clean-ups skip)

// Every rank's `text`, in rank order, on every rank (MPI_Allgather of lengths, then Allgatherv).
std::vector<std::string> allgather_strings(const std::string& text, MPI_Comm comm);

}  // namespace dlx::comm
