// SPDX-License-Identifier: Apache-2.0
#pragma once
// The MPI backend's allreduce with a fixed reduction order. Integer sums are exact in any order,
// and with two ranks a floating-point sum has a single addition per element (x0 + x1 == x1 + x0),
// so those go to MPI_Allreduce as they are. With three or more ranks Open MPI's algorithms (and
// so the rounding) change with the message size and the element's position (recursive doubling
// for small messages, a segmented ring for large ones); floating-point sums then use the direct
// reduce-scatter + allgather below, which adds every element in rank order:
//
//   1. The buffer is cut into `size` contiguous chunks, chunk r = [count*r/size, count*(r+1)/size).
//   2. MPI_Alltoallv: rank r receives chunk r from every rank, stacked in rank order.
//   3. Rank r sums its chunk as ((x0 + x1) + x2) + ... in rank order.
//   4. MPI_Allgatherv (in place): every rank receives every summed chunk.
//
// Each rank sends and receives (size-1)/size of the buffer in each of steps 2 and 4, as a ring
// allreduce does; the difference is O(size) messages per step instead of O(1), which does not
// matter for the node counts of one trial. Large buffers go in pieces (MPI counts are int).
#include <cstddef>
#include <vector>

#include <mpi.h>

#include "dlx/comm/tensor.hpp"

namespace dlx::comm::detail {

MPI_Datatype mpi_type(DataType type);

// In place over `comm` (rank `rank` of `size`); `scratch` is reused between calls.
void ordered_allreduce_sum(Tensor tensor, MPI_Comm comm, int rank, int size,
                           std::vector<std::byte>& scratch);

}  // namespace dlx::comm::detail
