// SPDX-License-Identifier: Apache-2.0
#pragma once
// Settings of the MPI backend (MpiCommunicator). mpi_options_from_environment() reads them from
// the process environment, where libdlx's users set them:
//   DLX_FUSION_SHM=0|1  fusion buckets through shared memory when every rank shares one node
//                       (default 1; 0 packs them and calls MPI_Allreduce, as before)
#include <cstddef>

namespace dlx::comm {

// Per rank. Two pieces of half this size are in use at a time; a larger bucket goes in pieces.
inline constexpr std::size_t kDefaultFusionShmBytes = std::size_t{4} << 20;

struct MpiOptions {
  bool shared_memory_fusion = true;
  std::size_t shared_memory_bytes = kDefaultFusionShmBytes;
};

// Throws CommError on a value other than 0 or 1 (unset or empty: the default).
MpiOptions mpi_options_from_environment();

}  // namespace dlx::comm
