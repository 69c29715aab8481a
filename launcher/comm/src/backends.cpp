// SPDX-License-Identifier: Apache-2.0
#include "dlx/comm/backends.hpp"

#include <cstdio>

#include <fmt/format.h>

#include "dlx/comm/comm_error.hpp"
#include "dlx/comm/mpi_check.hpp"

namespace dlx::comm {

namespace {

// True when `usable` holds on every rank (so all ranks pick the same backend).
bool on_every_rank(bool usable, MPI_Comm world) {
  int mine = usable ? 1 : 0;
  int all = 0;
  DLX_MPI_CHECK(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, world));
  return all == 1;
}

}  // namespace

std::unique_ptr<Communicator> make_communicator(MPI_Comm world, const BackendOptions& options) {
  int rank = 0;
  DLX_MPI_CHECK(MPI_Comm_rank(world, &rank));
  const auto backends = enabled_backends();
  std::string skipped;  // why the preferred backends were not taken
  for (const auto& backend : backends) {
    if (!options.forced.empty() && backend.name != options.forced) continue;
    std::string reason = backend.unavailable ? backend.unavailable() : std::string();
    if (!on_every_rank(reason.empty() && backend.create != nullptr, world)) {
      if (!options.forced.empty()) {
        throw CommError("dlx", 0, fmt::format("DLX_COMM_BACKEND={}: not usable here ({})",
                                              options.forced,
                                              reason.empty() ? "not on every rank" : reason));
      }
      if (skipped.empty()) skipped = reason.empty() ? "not usable on every rank" : reason;
      continue;
    }
    if (rank == 0 && options.announce && !skipped.empty()) {
      std::fprintf(stderr, "dlx: %s: using %s\n", skipped.c_str(), backend.description.c_str());
    }
    return backend.create(world, options);
  }
  throw CommError("dlx", 0,
                  options.forced.empty()
                      ? std::string("no communicator backend is usable")
                      : fmt::format("DLX_COMM_BACKEND={}: no such backend (use mpi or nccl)",
                                    options.forced));
}

}  // namespace dlx::comm
