// SPDX-License-Identifier: Apache-2.0
#pragma once
// The collectives a data-parallel trainer needs, independent of the transport. Backends: NCCL on
// GPUs (comm/nccl_communicator.*, built only with CUDA) and MPI on CPUs (comm/mpi_communicator.*);
// backends.hpp picks one at run time. Every rank must make the same calls in the same order with
// the same sizes (a collective is entered by all ranks). Buffers are host memory; a GPU backend
// stages them through device memory. Failures throw CommError; a backend never hangs silently.
//
// Ordering: the operations of one communicator, blocking and non-blocking, take effect in the
// order they were called. A blocking call first waits for every outstanding non-blocking one.
//
// Reduction order: the MPI backend sums every element in rank order (x0 + x1 + ... + xn-1),
// whatever the buffer's size or the element's position in it, so an element's result does not
// depend on how tensors are fused into buckets and training is bit-reproducible on one world
// size. The NCCL backend is deterministic run to run for the same sizes; its order is NCCL's.
#include <cstddef>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "dlx/comm/allreduce_handle.hpp"
#include "dlx/comm/tensor.hpp"

namespace dlx::comm {

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual std::string_view name() const noexcept = 0;  // "mpi", "nccl"
  virtual int rank() const noexcept = 0;
  virtual int size() const noexcept = 0;

  // In place: every rank ends with the element-wise sum over all ranks.
  virtual void allreduce_sum(Tensor tensor) = 0;
  // Starts the same sum and returns at once; the buffer must not be touched until the handle's
  // wait() returned. The default runs it on the calling thread (a completed handle); the MPI
  // backend runs it on a background thread so that it overlaps with the caller's computation.
  virtual AllreduceHandle allreduce_sum_async(Tensor tensor);
  // A fusion bucket (fused_allreduce.hpp): tensors of one element type summed in place, as if
  // concatenated. True when the backend sums a bucket without the caller packing it into one
  // buffer first (the MPI backend on one node, through shared memory); else FusedAllreduce packs
  // and calls allreduce_sum. The defaults sum tensor by tensor (same result, no fusion).
  virtual bool sums_buckets() const noexcept { return false; }
  virtual void allreduce_sum_bucket(std::span<const Tensor> tensors);
  // Non-blocking: the handle owns the list; the tensors' memory stays untouched until wait().
  virtual AllreduceHandle allreduce_sum_bucket_async(std::vector<Tensor> tensors);
  // In place: every rank ends with `root`'s bytes.
  virtual void broadcast(std::span<std::byte> bytes, int root) = 0;
  virtual void barrier() = 0;

  template <Reducible T>
  void allreduce_sum(std::span<T> values) {
    allreduce_sum(Tensor::of(values));
  }
  template <Reducible T>
  AllreduceHandle allreduce_sum_async(std::span<T> values) {
    return allreduce_sum_async(Tensor::of(values));
  }

  // Broadcast of any trivially copyable values (a struct, a vector's data()).
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void broadcast(std::span<T> values, int root) {
    broadcast(std::as_writable_bytes(values), root);
  }
};

}  // namespace dlx::comm
