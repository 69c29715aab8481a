// SPDX-License-Identifier: Apache-2.0
// The backend list of a build without CUDA/NCCL (CMake compiles this or backends_nccl.cpp).
#include <memory>

#include "dlx/comm/backends.hpp"
#include "dlx/comm/mpi_communicator.hpp"

namespace dlx::comm {

std::vector<Backend> enabled_backends() {
  return {
      Backend{"nccl", "the NCCL (GPU) backend",
              [] { return std::string("built without CUDA/NCCL"); }, nullptr},
      Backend{"mpi", "the MPI (CPU) backend", nullptr,
              [](MPI_Comm world, const BackendOptions&) -> std::unique_ptr<Communicator> {
                return std::make_unique<MpiCommunicator>(world);
              }},
  };
}

}  // namespace dlx::comm
