// SPDX-License-Identifier: Apache-2.0
#pragma once
// The GPU backend (built only with CUDA and NCCL). Host spans are staged through one device
// buffer that grows on demand; collectives run on the communicator's own stream. Every wait polls
// ncclCommGetAsyncError with a deadline, so a dead peer becomes a CommError, not a hang.
#include <chrono>
#include <cstddef>

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include "dlx/comm/communicator.hpp"

namespace dlx::comm {

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
  using Communicator::allreduce_sum;
  using Communicator::allreduce_sum_async;
  void broadcast(std::span<std::byte> bytes, int root) override;
  using Communicator::broadcast;
  void barrier() override;

 private:
  void reduce_in_place(void* host, std::size_t count, std::size_t element_size,
                       ncclDataType_t type);
  void* staging(std::size_t bytes);
  void wait(const char* operation);  // until the stream is idle, an async error, or the deadline

  ncclComm_t comm_ = nullptr;  // set to nullptr once aborted
  cudaStream_t stream_ = nullptr;
  void* device_buffer_ = nullptr;
  std::size_t capacity_ = 0;
  int rank_ = 0;
  int size_ = 1;
  int device_ = 0;
  std::chrono::seconds timeout_;
};

}  // namespace dlx::comm
