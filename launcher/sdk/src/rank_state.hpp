// SPDX-License-Identifier: Apache-2.0
#pragma once
// Per-rank checkpoint state (each rank's own tensors and RNG streams) on its way to rank 0, the
// only writer: packed into one byte string per rank, gathered with MPI_Gatherv, unpacked on rank 0
// into TensorViews named ranks/<r>/<name> and rng/rank-<r>/<name> over the gathered bytes.
// Packed form: an 8-byte little-endian header length, a JSON header
// ({"tensors": [[name, dtype, shape, bytes]...], "rng": [[name, bytes]...]}), then the bytes.
#include <cstddef>
#include <string>
#include <vector>

#include <mpi.h>

#include "dlx/checkpoint/tensor.hpp"
#include "dlx/checkpointing.hpp"

namespace dlx::detail {

// Throws CheckpointingError for a tensor in device memory (per-rank state is host state).
std::string pack_rank_state(const TrainingState& state);

// Views into `packed` (which must outlive them), named for `rank`. Throws CheckpointingError when
// `packed` is malformed.
std::vector<checkpoint::TensorView> unpack_rank_state(int rank, const std::string& packed);

// Every rank's `mine` on `root`, in rank order (empty on the other ranks). Collective.
std::vector<std::string> gather_to_root(const std::string& mine, int root, MPI_Comm comm);

}  // namespace dlx::detail
