// SPDX-License-Identifier: Apache-2.0
#pragma once
// The collectives a data-parallel trainer needs, independent of the transport. Backends: NCCL on
// GPUs (comm/nccl_communicator.*, built only with CUDA) and MPI on CPUs (comm/mpi_communicator.*);
// backends.hpp picks one at run time. Every rank must make the same calls in the same order with
// the same sizes (a collective is entered by all ranks). Failures throw CommError; a backend never
// hangs silently.
//
// Memory: a Tensor is host memory or the device memory of the rank's GPU (Tensor::memory).
//   host:   every backend; the NCCL backend stages it through a device buffer.
//   device: where reduces_device_memory() says so: the NCCL backend always, in place, with no
//           copy through the host; the MPI backend only where Open MPI is CUDA-aware. Elsewhere a
//           device tensor is refused with a CommError that says what to do; it is never read.
//   Device collectives are ordered against the trainer's CUDA stream (set_cuda_stream; default:
//   the legacy default stream): they start after the work queued there before the call, and work
//   queued there after the call sees the sums, without a host round trip. The host also waits,
//   in a blocking call or the handle's wait(), until the sums are done on the device: that wait
//   has the backend's deadline, so a dead peer is a CommError rather than a trainer whose next
//   kernel waits forever.
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
  // True when device tensors are summed here (see "Memory" above).
  virtual bool reduces_device_memory() const noexcept { return false; }
  // Returns when device tensors are summed here; else throws the CommError that says why and what
  // to do. Callers check before any work, so a refused list leaves every tensor as it was.
  virtual void require_device_memory() const;
  // The CUDA stream (a cudaStream_t; nullptr: the legacy default stream) device collectives are
  // ordered against. The trainer's thread sets it; the next device collective uses it.
  void set_cuda_stream(void* stream) noexcept { cuda_stream_ = stream; }
  void* cuda_stream() const noexcept { return cuda_stream_; }
  // In place: every rank ends with `root`'s bytes (host memory).
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

 private:
  void* cuda_stream_ = nullptr;
};

namespace detail {
// The CommError for a device tensor this backend cannot sum: which backend, why, and what to do.
[[noreturn]] void refuse_device_memory(std::string_view backend, std::string_view why);
bool any_on_device(std::span<const Tensor> tensors) noexcept;
}  // namespace detail

}  // namespace dlx::comm
