// SPDX-License-Identifier: Apache-2.0
// The backend list of a build with CUDA/NCCL (CMake compiles this or backends_cpu.cpp).
#include <memory>

#include "dlx/comm/backends.hpp"
#include "dlx/comm/mpi_communicator.hpp"
#include "dlx/comm/nccl_communicator.hpp"

namespace dlx::comm {

std::vector<Backend> enabled_backends() {
  return {
      Backend{"nccl", "the NCCL (GPU) backend",
              [] { return cuda_device_count() > 0 ? std::string() : "no GPU visible"; },
              [](MPI_Comm world, const BackendOptions& options) -> std::unique_ptr<Communicator> {
                return std::make_unique<NcclCommunicator>(world, options.local_rank,
                                                          options.timeout);
              }},
      Backend{"mpi", "the MPI (CPU) backend", nullptr,
              [](MPI_Comm world, const BackendOptions&) -> std::unique_ptr<Communicator> {
                return std::make_unique<MpiCommunicator>(world);
              }},
  };
}

}  // namespace dlx::comm
