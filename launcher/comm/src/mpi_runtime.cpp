// SPDX-License-Identifier: Apache-2.0
#include "dlx/comm/mpi_runtime.hpp"

#include <atomic>
#include <cstddef>
#include <numeric>

#include "dlx/comm/comm_error.hpp"
#include "dlx/comm/mpi_check.hpp"

// The portable libdlx_c (cmake/DlxPortableC.cmake) references Open MPI weakly: where no MPI
// library is in the process, MPI_Initialized is null, and so is every other MPI function.
#ifdef DLX_WEAK_MPI_AND_SLURM
#pragma weak MPI_Initialized
#endif

namespace dlx::comm {

namespace {
std::atomic<bool> g_abandoned{false};

bool mpi_library_present() noexcept {
#ifdef DLX_WEAK_MPI_AND_SLURM
  return &MPI_Initialized != nullptr;
#else
  return true;
#endif
}
}  // namespace

void abandon_mpi() noexcept { g_abandoned.store(true); }
bool mpi_abandoned() noexcept { return g_abandoned.load(); }

MpiRuntime::MpiRuntime() {
  if (!mpi_library_present()) {
    throw CommError("MPI", 0,
                    "dlx: this is the portable libdlx_c (for container images), and no MPI library is "
                    "loaded in this process: a trial with a communicator needs MPI. Create the trial "
                    "without one (DLX_TRIAL_NO_COMMUNICATOR in the C API; the Python package always "
                    "does), or use the libdlx_c of the cluster's own build, which links Open MPI");
  }
  int initialized = 0;
  DLX_MPI_CHECK(MPI_Initialized(&initialized));
  if (initialized == 0) {
    // Errors before MPI_Init can only abort; MPI_Init's own failure is reported by MPI.
    int provided = MPI_THREAD_SINGLE;
    DLX_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
    owns_ = true;
  }
  DLX_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  DLX_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  DLX_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
}

MpiRuntime::~MpiRuntime() {
  if (!owns_ || g_abandoned.load()) return;
  int finalized = 0;
  if (MPI_Finalized(&finalized) == MPI_SUCCESS && finalized == 0) MPI_Finalize();
}

std::vector<std::string> allgather_strings(const std::string& text, MPI_Comm comm) {
  int size = 0;
  DLX_MPI_CHECK(MPI_Comm_size(comm, &size));
  const auto count = static_cast<std::size_t>(size);
  std::vector<int> lengths(count);
  int my_length = static_cast<int>(text.size());
  DLX_MPI_CHECK(MPI_Allgather(&my_length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm));
  std::vector<int> offsets(count, 0);
  std::exclusive_scan(lengths.begin(), lengths.end(), offsets.begin(), 0);
  std::string all(static_cast<std::size_t>(offsets.back() + lengths.back()), '\0');
  DLX_MPI_CHECK(MPI_Allgatherv(text.data(), my_length, MPI_CHAR, all.data(), lengths.data(),
                               offsets.data(), MPI_CHAR, comm));
  std::vector<std::string> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    out.push_back(all.substr(static_cast<std::size_t>(offsets[i]),
                             static_cast<std::size_t>(lengths[i])));
  }
  return out;
}

}  // namespace dlx::comm
