// SPDX-License-Identifier: Apache-2.0
#include "dlx/comm/nccl_communicator.hpp"

#include <algorithm>
#include <future>
#include <thread>

#include <fmt/format.h>

#include "device_bucket.hpp"
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
 *  6. Stream: each rank creates a non-blocking stream for its collectives, and two events.
 *
 * Host tensors afterwards: host -> device copy, the NCCL call, device -> host copy, all on the
 * stream; wait() then polls cudaStreamQuery and ncclCommGetAsyncError until the stream is idle,
 * and aborts the communicator on an asynchronous error or when `timeout` passes.
 *
 * Device tensors (in place, nothing through the host), T = the trainer's stream (cuda_stream()):
 *   a. record trainer_ready_ on T; our stream waits for it: the sum reads the gradients T's
 *      kernels wrote before the call, and not before they are written;
 *   b. one tensor: ncclAllReduce in place. A bucket: one copy kernel into the bucket buffer,
 *      ncclAllReduce on it, one copy kernel back (device_bucket.hpp, copy_segments.hpp);
 *   c. record sums_done_ on our stream; T waits for it: T's later kernels (the optimizer step)
 *      see the sums without the host in the loop;
 *   d. the blocking call, or the handle's wait(), runs wait(): the host returns once our stream
 *      is idle, with the deadline, so a dead peer is a CommError.
 * Our stream runs every collective in call order, so one bucket buffer serves all buckets; it
 * grows with stream-ordered cudaMallocAsync/cudaFreeAsync, never a device-wide synchronisation.
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
  DLX_CUDA_CHECK(detail::AbortOnFailure{comm_},
                 cudaEventCreateWithFlags(&trainer_ready_, cudaEventDisableTiming));
  DLX_CUDA_CHECK(detail::AbortOnFailure{comm_},
                 cudaEventCreateWithFlags(&sums_done_, cudaEventDisableTiming));
  copier_ = std::make_unique<detail::DeviceBucketCopier>();
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
  if (bucket_buffer_ != nullptr) cudaFreeAsync(bucket_buffer_, stream_);
  if (trainer_ready_ != nullptr) cudaEventDestroy(trainer_ready_);
  if (sums_done_ != nullptr) cudaEventDestroy(sums_done_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

std::uint64_t NcclCommunicator::device_copy_batches() const noexcept {
  return copier_ ? copier_->batches() : 0;
}

void* NcclCommunicator::device_bucket(std::size_t bytes) {
  if (bytes > bucket_capacity_) {
    const std::size_t grown = std::max(bytes, bucket_capacity_ * 2);
    // Both in our stream's order: the old buffer is freed after the buckets that use it.
    if (bucket_buffer_ != nullptr) {
      DLX_CUDA_CHECK(detail::AbortOnFailure{comm_}, cudaFreeAsync(bucket_buffer_, stream_));
    }
    bucket_buffer_ = nullptr;
    bucket_capacity_ = 0;
    DLX_CUDA_CHECK(detail::AbortOnFailure{comm_}, cudaMallocAsync(&bucket_buffer_, grown, stream_));
    bucket_capacity_ = grown;
  }
  return bucket_buffer_;
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
  ++allreduce_calls_;
  DLX_CUDA_CHECK(detail::AbortOnFailure{comm_}, cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_));
  wait("ncclAllReduce");
}

namespace {

ncclDataType_t nccl_type(DataType type);

}  // namespace

void NcclCommunicator::enqueue_on_device(std::span<const Tensor> tensors) {
  if (comm_ == nullptr) throw CommError("NCCL", 0, "the NCCL communicator was aborted earlier");
  std::size_t bytes = 0;
  const Tensor* only = nullptr;  // the one non-empty tensor, when there is one
  std::size_t non_empty = 0;
  for (const Tensor& tensor : tensors) {
    if (!tensor.on_device()) {
      throw CommError("dlx", 0, "a bucket mixes host and device tensors (FusedAllreduce never "
                                "does; pass them in separate calls)");
    }
    if (tensor.type != tensors.front().type) {
      throw CommError("dlx", 0, "a bucket mixes element types (FusedAllreduce never does)");
    }
    if (tensor.count == 0) continue;
    bytes += tensor.bytes();
    only = &tensor;
    ++non_empty;
  }
  if (non_empty == 0) return;
  const auto trainer = static_cast<cudaStream_t>(cuda_stream());
  // a. after the trainer's work queued so far
  DLX_CUDA_CHECK(detail::AbortOnFailure{comm_}, cudaEventRecord(trainer_ready_, trainer));
  DLX_CUDA_CHECK(detail::AbortOnFailure{comm_}, cudaStreamWaitEvent(stream_, trainer_ready_, 0));
  // b. the sum, in place
  const DataType type = tensors.front().type;
  if (non_empty == 1) {
    DLX_NCCL_CHECK(comm_, ncclAllReduce(only->data, only->data, only->count, nccl_type(type),
                                        ncclSum, comm_, stream_));
  } else {
    auto* bucket = static_cast<std::byte*>(device_bucket(bytes));
    DLX_CUDA_CHECK(detail::AbortOnFailure{comm_}, copier_->pack(tensors, bucket, stream_));
    DLX_NCCL_CHECK(comm_, ncclAllReduce(bucket, bucket, bytes / size_of(type), nccl_type(type),
                                        ncclSum, comm_, stream_));
    DLX_CUDA_CHECK(detail::AbortOnFailure{comm_}, copier_->unpack(bucket, tensors, stream_));
  }
  ++allreduce_calls_;
  // c. the trainer's later work after the sums
  DLX_CUDA_CHECK(detail::AbortOnFailure{comm_}, cudaEventRecord(sums_done_, stream_));
  DLX_CUDA_CHECK(detail::AbortOnFailure{comm_}, cudaStreamWaitEvent(trainer, sums_done_, 0));
}

AllreduceHandle NcclCommunicator::pending(const char* operation) {
  // Deferred: wait() runs on the caller's thread (CUDA and NCCL calls stay on the trainer's);
  // ready() asks the stream, without waiting.
  return AllreduceHandle(std::async(std::launch::deferred, [this, operation] { wait(operation); }),
                         [this] { return cudaStreamQuery(stream_) == cudaSuccess; });
}

AllreduceHandle NcclCommunicator::allreduce_sum_async(Tensor tensor) {
  if (!tensor.on_device()) return Communicator::allreduce_sum_async(tensor);
  try {
    enqueue_on_device({&tensor, 1});
  } catch (...) {
    return AllreduceHandle::completed(std::current_exception());
  }
  return pending("ncclAllReduce");
}

void NcclCommunicator::allreduce_sum_bucket(std::span<const Tensor> tensors) {
  if (!detail::any_on_device(tensors)) return Communicator::allreduce_sum_bucket(tensors);
  enqueue_on_device(tensors);
  wait("ncclAllReduce");
}

AllreduceHandle NcclCommunicator::allreduce_sum_bucket_async(std::vector<Tensor> tensors) {
  if (!detail::any_on_device(tensors)) {
    return Communicator::allreduce_sum_bucket_async(std::move(tensors));
  }
  try {
    enqueue_on_device(tensors);  // the list is read now; only the memory must wait
  } catch (...) {
    return AllreduceHandle::completed(std::current_exception());
  }
  return pending("ncclAllReduce");
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

// Non-blocking sums of host tensors use Communicator's default (run here, completed handle): the
// staging buffer is shared by all operations.
void NcclCommunicator::allreduce_sum(Tensor tensor) {
  if (tensor.on_device()) {
    enqueue_on_device({&tensor, 1});
    wait("ncclAllReduce");
    return;
  }
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
