// SPDX-License-Identifier: Apache-2.0
#include "dlx/comm/nccl_communicator.hpp"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "dlx/comm/comm_error.hpp"
#include "dlx/comm/mpi_check.hpp"
#include "nccl_check.hpp"

/*
 * NCCL bring-up protocol (every rank of `parent` runs this constructor at the same time):
 *
 *  1. Device: each rank binds GPU (local_rank % visible GPUs) with cudaSetDevice. Under srun with
 *     --gpus-per-task each rank sees one GPU and binds device 0; with all GPUs visible, the local
 *     rank spreads the ranks of one node over its GPUs.
 *  2. Unique id: rank 0 calls ncclGetUniqueId. The id embeds rank 0's bootstrap address, so it
 *     must come from exactly one rank.
 *  3. Distribution: rank 0 broadcasts {status, id} with MPI_Bcast over `parent`. The status is
 *     part of the message so that a failure on rank 0 fails every rank at the same point instead
 *     of leaving them waiting for an id that never comes.
 *  4. Init: every rank calls ncclCommInitRankConfig(size, id, rank) on a non-blocking
 *     communicator (config.blocking = 0) and polls ncclCommGetAsyncError until the state leaves
 *     ncclInProgress or `timeout` passes; on timeout or error it calls ncclCommAbort.
 *  5. Agreement: an MPI_Allreduce(MIN) of "my init succeeded" makes every rank throw if any rank
 *     failed, so no rank enters a collective its peers will never join.
 *  6. Stream: each rank creates a non-blocking stream for its collectives.
 *
 * Collectives afterwards: host -> device copy, the NCCL call, device -> host copy, all on the
 * stream; wait() then polls cudaStreamQuery and ncclCommGetAsyncError until the stream is idle,
 * and aborts the communicator on an asynchronous error or when `timeout` passes.
 */

namespace dlx::comm {

using detail::abort_communicator;

namespace {

struct IdMessage {
  int status = 0;  // 0: rank 0 produced an id; otherwise the ncclResult_t of the failure
  ncclUniqueId id{};
};

// Polls a non-blocking communicator until it leaves ncclInProgress; aborts it on timeout.
void wait_until_ready(ncclComm_t& comm, std::chrono::seconds timeout, const char* operation) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    ncclResult_t state = ncclSuccess;
    DLX_NCCL_CHECK(comm, ncclCommGetAsyncError(comm, &state));
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) detail::fail_nccl(state, comm, operation, __FILE__, __LINE__);
    if (std::chrono::steady_clock::now() > deadline) {
      abort_communicator(comm);
      throw CommError("NCCL", static_cast<int>(ncclInProgress),
                      fmt::format("{} did not finish within {} s (a peer is gone or stuck; "
                                  "communicator aborted)", operation, timeout.count()));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace

int cuda_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error of a missing driver
    count = 0;
  }
  return count;
}

NcclCommunicator::NcclCommunicator(MPI_Comm parent, int local_rank,
                                   std::chrono::seconds timeout)
    : timeout_(timeout) {
  DLX_MPI_CHECK(MPI_Comm_rank(parent, &rank_));
  DLX_MPI_CHECK(MPI_Comm_size(parent, &size_));
  // 1. device
  const int devices = cuda_device_count();
  if (devices < 1) throw CommError("CUDA", 0, "the NCCL backend needs a GPU; none is visible");
  device_ = local_rank % devices;
  DLX_CUDA_CHECK(detail::AbortOnFailure{comm_}, cudaSetDevice(device_));
  // 2-3. unique id from rank 0, with its status
  IdMessage message;
  if (rank_ == 0) message.status = static_cast<int>(ncclGetUniqueId(&message.id));
  DLX_MPI_CHECK(MPI_Bcast(&message, static_cast<int>(sizeof message), MPI_BYTE, 0, parent));
  if (message.status != static_cast<int>(ncclSuccess)) {
    throw CommError("NCCL", message.status,
                    fmt::format("rank 0 could not create the NCCL unique id: {}",
                                ncclGetErrorString(static_cast<ncclResult_t>(message.status))));
  }
  // 4. non-blocking init with a deadline; 5. every rank agrees it worked
  int ok = 1;
  std::string failure;
  try {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    DLX_NCCL_CHECK(comm_, ncclCommInitRankConfig(&comm_, size_, message.id, rank_, &config));
    wait_until_ready(comm_, timeout_, "ncclCommInitRankConfig");
  } catch (const CommError& error) {
    ok = 0;
    failure = error.what();
  }
  int all_ok = 0;
  DLX_MPI_CHECK(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, parent));
  if (all_ok == 0) {
    abort_communicator(comm_);
    throw CommError("NCCL", 0, failure.empty() ? "NCCL initialisation failed on another rank"
                                               : failure);
  }
  // 6. stream
  DLX_CUDA_CHECK(detail::AbortOnFailure{comm_}, cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_ != nullptr) {
    // Flush outstanding work; failures are ignored (a destructor never throws), the wait
    // aborts the communicator if the finalisation does not complete in time.
    static_cast<void>(ncclCommFinalize(comm_));
    try {
      wait_until_ready(comm_, timeout_, "ncclCommFinalize");
    } catch (...) {
    }
    if (comm_ != nullptr) ncclCommDestroy(comm_);
  }
  if (device_buffer_ != nullptr) cudaFree(device_buffer_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void* NcclCommunicator::staging(std::size_t bytes) {
  if (bytes > capacity_) {
    const std::size_t grown = std::max(bytes, capacity_ * 2);
    if (device_buffer_ != nullptr) DLX_CUDA_CHECK(detail::AbortOnFailure{comm_}, cudaFree(device_buffer_));
    device_buffer_ = nullptr;
    capacity_ = 0;
    DLX_CUDA_CHECK(detail::AbortOnFailure{comm_}, cudaMalloc(&device_buffer_, grown));
    capacity_ = grown;
  }
  return device_buffer_;
}

void NcclCommunicator::wait(const char* operation) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (true) {
    const cudaError_t query = cudaStreamQuery(stream_);
    if (query == cudaSuccess) return;
    if (query != cudaErrorNotReady) DLX_CUDA_CHECK(detail::AbortOnFailure{comm_}, query);
    ncclResult_t state = ncclSuccess;
    DLX_NCCL_CHECK(comm_, ncclCommGetAsyncError(comm_, &state));
    if (state != ncclSuccess && state != ncclInProgress) {
      detail::fail_nccl(state, comm_, operation, __FILE__, __LINE__);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      abort_communicator(comm_);
      throw CommError("NCCL", static_cast<int>(ncclInProgress),
                      fmt::format("{} did not finish within {} s (a peer is gone or stuck; "
                                  "communicator aborted)", operation, timeout_.count()));
    }
    std::this_thread::yield();
  }
}

void NcclCommunicator::reduce_in_place(void* host, std::size_t count, std::size_t element_size,
                                       ncclDataType_t type) {
  if (comm_ == nullptr) throw CommError("NCCL", 0, "the NCCL communicator was aborted earlier");
  if (count == 0) return;
  const std::size_t bytes = count * element_size;
  void* device = staging(bytes);
  DLX_CUDA_CHECK(detail::AbortOnFailure{comm_}, cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_));
  DLX_NCCL_CHECK(comm_, ncclAllReduce(device, device, count, type, ncclSum, comm_, stream_));
  DLX_CUDA_CHECK(detail::AbortOnFailure{comm_}, cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_));
  wait("ncclAllReduce");
}

namespace {

ncclDataType_t nccl_type(DataType type) {
  switch (type) {
    case DataType::float32: return ncclFloat32;
    case DataType::float64: return ncclFloat64;
    case DataType::int32: return ncclInt32;
    case DataType::int64: return ncclInt64;
    case DataType::uint32: return ncclUint32;
    case DataType::uint64: return ncclUint64;
  }
  return ncclFloat32;
}

}  // namespace

// Non-blocking sums use Communicator's default (run here, completed handle): the staging buffer
// is shared by all operations. Overlap on GPUs comes from the framework's own streams.
void NcclCommunicator::allreduce_sum(Tensor tensor) {
  reduce_in_place(tensor.data, tensor.count, size_of(tensor.type), nccl_type(tensor.type));
}

void NcclCommunicator::broadcast(std::span<std::byte> bytes, int root) {
  if (comm_ == nullptr) throw CommError("NCCL", 0, "the NCCL communicator was aborted earlier");
  if (bytes.empty()) return;
  void* device = staging(bytes.size());
  DLX_CUDA_CHECK(detail::AbortOnFailure{comm_},
                 cudaMemcpyAsync(device, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, stream_));
  DLX_NCCL_CHECK(comm_, ncclBroadcast(device, device, bytes.size(), ncclUint8, root, comm_,
                                      stream_));
  DLX_CUDA_CHECK(detail::AbortOnFailure{comm_},
                 cudaMemcpyAsync(bytes.data(), device, bytes.size(), cudaMemcpyDeviceToHost, stream_));
  wait("ncclBroadcast");
}

void NcclCommunicator::barrier() {
  // NCCL has no barrier: a one-element allreduce completes only when every rank joined.
  float token = 0.0F;
  allreduce_sum(std::span<float>(&token, 1));
}

}  // namespace dlx::comm
