// SPDX-License-Identifier: Apache-2.0
#pragma once
// The GPU backend (built only with CUDA and NCCL). Device tensors are summed in place; a bucket of
// several is packed into a device buffer by one copy kernel. Host tensors are staged through a
// device buffer that grows on demand. Collectives run on the communicator's own stream, ordered
// against the trainer's stream with events (communicator.hpp, "Memory"). Every wait polls
// ncclCommGetAsyncError with a deadline, so a dead peer becomes a CommError, not a hang.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include "dlx/comm/communicator.hpp"

namespace dlx::comm {

namespace detail {
class DeviceBucketCopier;
}

// cudaGetDeviceCount, with any error (no driver, no device) read as 0 GPUs.
int cuda_device_count() noexcept;

class NcclCommunicator final : public Communicator {
 public:
  // Collective over `parent`; see the bring-up protocol in nccl_communicator.cpp.
  NcclCommunicator(MPI_Comm parent, int local_rank, std::chrono::seconds timeout);
  ~NcclCommunicator() override;

  std::string_view name() const noexcept override { return "nccl"; }
  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  void allreduce_sum(Tensor tensor) override;
  // Device tensors: enqueued, the handle's wait() waits for the sums. Host tensors: blocking.
  AllreduceHandle allreduce_sum_async(Tensor tensor) override;
  using Communicator::allreduce_sum;
  using Communicator::allreduce_sum_async;
  bool reduces_device_memory() const noexcept override { return true; }
  // Device buckets: packed on the device, one NCCL call, unpacked. Host buckets: tensor by tensor
  // (FusedAllreduce packs host buckets itself, since sums_buckets() is false).
  void allreduce_sum_bucket(std::span<const Tensor> tensors) override;
  AllreduceHandle allreduce_sum_bucket_async(std::vector<Tensor> tensors) override;
  void broadcast(std::span<std::byte> bytes, int root) override;
  using Communicator::broadcast;
  void barrier() override;

  // For checks: bytes of the host-staging device buffer (0 while only device tensors were
  // reduced: they never pass through the host), ncclAllReduce calls and copy-kernel launches so far.
  std::size_t host_staging_bytes() const noexcept { return capacity_; }
  std::uint64_t nccl_allreduce_calls() const noexcept { return allreduce_calls_; }
  std::uint64_t device_copy_batches() const noexcept;

 private:
  void enqueue_on_device(std::span<const Tensor> tensors);  // in stream order, no host wait
  AllreduceHandle pending(const char* operation);  // a handle whose wait() is wait(operation)
  void* device_bucket(std::size_t bytes);
  void reduce_in_place(void* host, std::size_t count, std::size_t element_size,
                       ncclDataType_t type);
  void* staging(std::size_t bytes);
  void wait(const char* operation);  // until the stream is idle, an async error, or the deadline

  ncclComm_t comm_ = nullptr;  // set to nullptr once aborted
  cudaStream_t stream_ = nullptr;
  void* device_buffer_ = nullptr;  // host staging
  std::size_t capacity_ = 0;
  void* bucket_buffer_ = nullptr;  // device fusion buckets (stream-ordered allocation)
  std::size_t bucket_capacity_ = 0;
  cudaEvent_t trainer_ready_ = nullptr;  // recorded on the trainer's stream before a collective
  cudaEvent_t sums_done_ = nullptr;      // recorded on ours after it; the trainer's stream waits
  std::unique_ptr<detail::DeviceBucketCopier> copier_;
  std::uint64_t allreduce_calls_ = 0;
  int rank_ = 0;
  int size_ = 1;
  int device_ = 0;
  std::chrono::seconds timeout_;
};

}  // namespace dlx::comm
