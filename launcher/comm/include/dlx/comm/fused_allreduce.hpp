// SPDX-License-Identifier: Apache-2.0
#pragma once
// Allreduce of a list of tensors (a model's gradients) through fusion buckets, as Horovod's
// fusion buffer does: consecutive tensors of one element type are packed into one buffer of at
// most `bucket_bytes`, reduced with one collective, and unpacked. Many small tensors then cost
// one collective instead of one each. The result is bit-for-bit the per-tensor allreduce_sum,
// because the backends' per-element reduction order does not depend on the buffer (see
// communicator.hpp) — the MPI tests check it for every element type, odd sizes and the bucket
// boundaries.
//
// Two ways to use it:
//   blocking:   fused.allreduce_sum(tensors);   // returns with every tensor summed
//   overlapped: during the backward pass, fused.add(gradient) as each gradient is final (in the
//               same order on every rank); a bucket starts reducing, without blocking, as soon
//               as the next tensor does not fit. fused.synchronize() before the optimizer step
//               starts the last bucket, waits for all and unpacks them.
// Which tensors are reduced alone, in place, depends on the backend's bucket path. Every rank
// must pass the same sequence of tensor sizes and types.
//   packed (NCCL, MPI across nodes, DLX_FUSION_SHM=0): the bucket is packed into one buffer,
//     summed with one call, unpacked. A tensor larger than the bucket, or of at least
//     `alone_bytes`, is reduced alone (no copy): copying a large tensor in and out of the buffer
//     costs more host memory bandwidth than the one call it saves (at 256 KiB two memcpy of the
//     tensor take longer than an MPI call's latency on one node; docs/benchmarks.md).
//   backend (Communicator::sums_buckets(): the MPI backend through shared memory when all ranks
//     share a node) gets the bucket's tensors, with no packing copy, and beats MPI_Allreduce in
//     place even for one tensor: `alone_bytes` does not apply; every bucket goes there, a bucket
//     of one tensor too, except a tensor larger than the bucket or of kSharedMemoryAloneBytes or
//     more, which is reduced alone, in place (docs/benchmarks.md has the sweep behind the limit).
//   device (tensors in GPU memory, communicator.hpp "Memory"): every bucket goes to the backend,
//     which packs it on the device (NCCL: one copy kernel in, one call, one copy kernel out) or
//     refuses it with a message (MPI without CUDA-aware Open MPI); FusedAllreduce never reads
//     device memory. A bucket holds tensors of one kind of memory. `alone_bytes` applies as on
//     the packed path (a tensor alone is summed in place, no copy).
// bucket_bytes 0 turns fusion off on both: every tensor is reduced alone, in place. Overlapped,
// add() starts a tensor of `alone_bytes` or more at once as a bucket of its own on both paths
// (through the backend's buckets below kSharedMemoryAloneBytes): waiting for the next gradient to
// fill its bucket would lengthen the step's tail by a layer's compute.
#include <cstddef>
#include <span>
#include <vector>

#include "dlx/comm/allreduce_handle.hpp"
#include "dlx/comm/communicator.hpp"
#include "dlx/comm/tensor.hpp"

namespace dlx::comm {

// Horovod's default fusion threshold (HOROVOD_FUSION_THRESHOLD): 64 MiB.
inline constexpr std::size_t kDefaultBucketBytes = std::size_t{64} << 20;
// Tensors from this size on skip the packed fusion buffer (DLX_FUSION_ALONE_BYTES overrides it in
// libdlx); not used when the backend sums buckets itself.
inline constexpr std::size_t kDefaultAloneBytes = std::size_t{128} << 10;
// The limit instead of alone_bytes when the backend sums buckets itself (shared memory on one
// node): from this size on MPI_Allreduce in place was faster than the window (docs/benchmarks.md).
inline constexpr std::size_t kSharedMemoryAloneBytes = std::size_t{8} << 20;

struct Bucket {
  std::size_t first = 0;  // tensors [first, last) of the list
  std::size_t last = 0;
  std::size_t bytes = 0;
};

// Pure: the buckets for `tensors`, in order. A bucket holds consecutive tensors of one type and
// one kind of memory whose bytes add up to at most `bucket_bytes` (at least one tensor; 0 means no
// fusion at all); a tensor of `alone_bytes` or more is a bucket of its own. Empty tensors need no reduction: skipped, or
// carried inside the range of the bucket around them.
std::vector<Bucket> plan_buckets(std::span<const Tensor> tensors, std::size_t bucket_bytes,
                                 std::size_t alone_bytes = kDefaultAloneBytes);

class FusedAllreduce {
 public:
  explicit FusedAllreduce(Communicator& comm, std::size_t bucket_bytes = kDefaultBucketBytes,
                          std::size_t alone_bytes = kDefaultAloneBytes);

  // Blocking: every tensor ends summed over all ranks. Throws CommError.
  void allreduce_sum(std::span<const Tensor> tensors);

  // Overlapped (see above). The tensors' memory must stay valid until synchronize() returns.
  void add(Tensor tensor);
  void flush();        // starts the partly filled bucket now, without waiting
  void synchronize();  // flush(), wait for all, unpack; throws the first CommError of the step

  std::size_t bucket_bytes() const noexcept { return bucket_bytes_; }
  std::size_t alone_bytes() const noexcept { return alone_bytes_; }
  Communicator& communicator() noexcept { return comm_; }

 private:
  struct InFlight {
    std::vector<Tensor> tensors;
    std::size_t buffer = 0;  // index into buffers_; unused when !fused
    bool fused = false;
    AllreduceHandle handle;
  };

  std::vector<std::byte>& buffer(std::size_t index, std::size_t bytes);
  std::size_t alone_limit() const noexcept;  // alone_bytes_, or none when the backend sums buckets
  bool summed_by_backend(Memory memory, std::size_t tensors, std::size_t bytes) const noexcept;

  Communicator& comm_;
  std::size_t bucket_bytes_;
  std::size_t alone_bytes_;
  std::vector<std::vector<std::byte>> buffers_;  // reused from step to step
  std::vector<Tensor> open_;                     // the bucket being filled by add()
  std::size_t open_bytes_ = 0;
  std::vector<InFlight> in_flight_;
};

}  // namespace dlx::comm
