// SPDX-License-Identifier: Apache-2.0
#pragma once
// Fusion buckets summed through MPI-3 shared memory, for a communicator whose ranks all run on
// one node (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) returns all of them). MPI_Allreduce of a
// packed bucket copies it into and out of Open MPI's shared-memory transport and has every rank
// add up the whole buffer; here each rank publishes in its segment only the slices the others
// sum, and adds up only its own slice, reading its own values straight from its tensors. Per
// byte of the bucket on 2 ranks: 1/2 copied in, 1/2 summed (written to the tensor and the
// segment), 1/2 copied out, with no extra copy for packing, so it is also worth taking for
// tensors too large to be worth packing (fused_allreduce.hpp, kSharedMemoryAloneBytes).
//
// The window: MPI_Win_allocate_shared over a private node communicator (the barriers below never
// match other traffic, whichever thread runs them), `segment_bytes` per rank, split into two
// halves; MPI_Win_lock_all(MPI_MODE_NOCHECK) for its whole life (the MPI-3 "unified" shared-memory
// model: plain loads and stores, ordered by MPI_Win_sync). Created and freed collectively by the
// MpiCommunicator's constructor and destructor, the only deterministic points on every rank.
//
// One bucket (tensors of one type, summed as if concatenated) goes through in pieces of at most
// half a segment, each piece in the other half from the previous one (whatever bucket that was).
// A piece's elements are cut as the rank-order sum cuts them (ordered_allreduce.hpp): slice
// s = [count*s/size, count*(s+1)/size); every segment's half h mirrors the piece's layout.
//
//   1. pack:   rank r copies every slice s != r of the piece from its tensors into its own
//              segment, half h, at slice s's offset (slice r's place stays free).
//   2. sync:   MPI_Win_sync; MPI_Barrier(node); MPI_Win_sync (every rank's piece is visible).
//   3. sum:    rank r computes slice r as ((x0 + x1) + x2) + ... in rank order, x_s from segment
//              s (s != r) and x_r from its own tensors, the same additions in the same order as
//              the MPI path, so every result is bit-identical to it for every world size; it
//              writes the sum into slice r's place of its own segment and into its tensors.
//              Integers are added as unsigned (wrap-around, as MPI).
//   4. sync:   as 2 (every slice is summed and visible).
//   5. unpack: rank r copies every slice s != r from segment s, half h, into its tensors.
//
// No barrier after 5: the next piece uses the other half, and the one after it comes back to h
// only after its own step 2, which no rank passes before every rank has finished this step 5
// (so no rank's step 1 or 3 overwrites what another still reads, whatever the pieces' sizes).
// A failed MPI call throws CommError; the ranks are then out of step and the communicator must
// not be used for another bucket (as after any failed collective).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <mpi.h>

#include "dlx/comm/tensor.hpp"

namespace dlx::comm::detail {

class SharedMemoryReducer {
 public:
  // Collective over `comm`. Null on every rank when the ranks do not all share one node, the
  // communicator has a single rank, or the window could not be made on some rank.
  static std::unique_ptr<SharedMemoryReducer> create(MPI_Comm comm, std::size_t segment_bytes);
  ~SharedMemoryReducer();  // collective: frees the window (skipped while unwinding or abandoned)
  SharedMemoryReducer(const SharedMemoryReducer&) = delete;
  SharedMemoryReducer& operator=(const SharedMemoryReducer&) = delete;

  // In place: tensors of one element type; every rank passes the same sizes. Throws CommError.
  void allreduce_sum(std::span<const Tensor> tensors);

  std::size_t piece_bytes() const noexcept { return half_bytes_; }
  std::uint64_t pieces() const noexcept { return pieces_.load(std::memory_order_relaxed); }

 private:
  SharedMemoryReducer() = default;
  void synchronize();
  // This rank's sum of `bytes` at `offset` in the segments, whose own values are at `mine`.
  void sum_run(DataType type, std::size_t offset, std::byte* mine, std::size_t bytes);

  MPI_Comm node_ = MPI_COMM_NULL;
  MPI_Win window_ = MPI_WIN_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::vector<std::byte*> segments_;  // every rank's segment, mapped here, in rank order
  std::size_t half_bytes_ = 0;        // a multiple of every element size
  std::atomic<std::uint64_t> pieces_{0};  // how many went through: selects the half
};

}  // namespace dlx::comm::detail
