// SPDX-License-Identifier: Apache-2.0
#pragma once
// Run-time choice of the Communicator backend. CMake decides which backends exist (the NCCL one
// only when CUDA and NCCL were found: backends_nccl.cpp vs backends_cpu.cpp); this picks the
// first usable one of an ordered list: NCCL when built and a GPU is visible, else MPI. Rank 0
// says once which backend it chose and why when it is not the first.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

#include "dlx/comm/communicator.hpp"

namespace dlx::comm {

struct BackendOptions {
  int local_rank = 0;  // selects the GPU: local_rank % visible devices
  std::string forced;  // "" (automatic), "mpi" or "nccl" (DLX_COMM_BACKEND)
  std::chrono::seconds timeout{300};  // a GPU collective that takes longer fails (no hang)
  bool announce = true;               // rank 0 prints the choice when it falls back
};

struct Backend {
  std::string name;
  std::string description;                    // "the MPI (CPU) backend"
  std::function<std::string()> unavailable;   // "" when usable, else the reason
  std::function<std::unique_ptr<Communicator>(MPI_Comm, const BackendOptions&)> create;
};

// In order of preference; defined by whichever backends_*.cpp CMake compiled.
std::vector<Backend> enabled_backends();

// Collective over `world`: every rank must get the same answer, so the decision uses only
// information that is the same everywhere (the build, the forced name) or is agreed with an
// MPI_Allreduce (whether every rank sees a GPU). Throws CommError.
std::unique_ptr<Communicator> make_communicator(MPI_Comm world, const BackendOptions& options);

}  // namespace dlx::comm
