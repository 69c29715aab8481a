// SPDX-License-Identifier: Apache-2.0
#include "dlx/comm/mpi_communicator.hpp"

#include <algorithm>
#include <climits>
#include <cstddef>

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's MPIX_Query_cuda_support
#endif

#include "comm_worker.hpp"
#include "cuda_stream.hpp"
#include "dlx/comm/mpi_check.hpp"
#include "ordered_allreduce.hpp"
#include "shared_memory_reducer.hpp"

namespace dlx::comm {

namespace {

// Whether this Open MPI moves GPU memory itself: built with CUDA (the macro) and, at run time,
// with CUDA found (the query). Other MPIs: no.
bool mpi_is_cuda_aware() noexcept {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm parent, const MpiOptions& options) {
  DLX_MPI_CHECK(MPI_Comm_dup(parent, &comm_));
  DLX_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  DLX_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  DLX_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  int provided = MPI_THREAD_SINGLE;
  DLX_MPI_CHECK(MPI_Query_thread(&provided));
  threaded_ = provided == MPI_THREAD_MULTIPLE;
  // Agreed, so that a rank whose environment says otherwise cannot leave the others waiting in
  // the window's collective creation.
  // The same for device memory: a rank that refused a device tensor while its peers entered
  // the collective would leave them waiting.
  int here[2] = {options.shared_memory_fusion ? 1 : 0,
                 mpi_is_cuda_aware() && detail::built_with_cuda() ? 1 : 0};
  int everywhere[2] = {0, 0};
  DLX_MPI_CHECK(MPI_Allreduce(here, everywhere, 2, MPI_INT, MPI_MIN, comm_));
  cuda_aware_ = everywhere[1] == 1;
  if (everywhere[0] == 1) {
    shared_ = detail::SharedMemoryReducer::create(comm_, options.shared_memory_bytes);
  }
  if (threaded_) worker_ = std::make_unique<detail::CommWorker>();
}

MpiCommunicator::~MpiCommunicator() {
  worker_.reset();  // finishes queued work before the window and the communicator go
  shared_.reset();
  int finalized = 0;
  if (comm_ != MPI_COMM_NULL && MPI_Finalized(&finalized) == MPI_SUCCESS && finalized == 0) {
    MPI_Comm_free(&comm_);
  }
}

void MpiCommunicator::drain() {
  if (worker_) worker_->drain();
}

void MpiCommunicator::require_device_memory() const {
  if (cuda_aware_) return;
  if (!detail::built_with_cuda()) detail::refuse_device_memory("mpi", "this dlx was built without CUDA");
  detail::refuse_device_memory(
      "mpi", "this Open MPI is not CUDA-aware (MPIX_Query_cuda_support() is 0 on at least one rank)");
}

// A CUDA-aware MPI reads the device memory itself, but knows nothing of the trainer's stream:
// the stream is synchronised first, so that the sum reads the finished gradients. MPI_SUM's order
// is the MPI library's here (the host path's rank order needs host memory).
void MpiCommunicator::reduce_on_device(Tensor tensor, void* stream) {
  detail::synchronize_cuda_stream(stream);
  constexpr std::size_t kMaxChunk = INT_MAX;  // MPI counts are int
  auto* bytes = static_cast<std::byte*>(tensor.data);
  for (std::size_t done = 0; done < tensor.count; done += kMaxChunk) {
    const std::size_t count = std::min(kMaxChunk, tensor.count - done);
    DLX_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, bytes + done * size_of(tensor.type),
                                static_cast<int>(count), detail::mpi_type(tensor.type), MPI_SUM,
                                comm_));
  }
}

void MpiCommunicator::allreduce_sum(Tensor tensor) {
  if (tensor.on_device()) require_device_memory();
  drain();
  if (tensor.on_device()) return reduce_on_device(tensor, cuda_stream());
  detail::ordered_allreduce_sum(tensor, comm_, rank_, size_, scratch_);
}

AllreduceHandle MpiCommunicator::allreduce_sum_async(Tensor tensor) {
  if (tensor.on_device()) require_device_memory();
  if (!worker_) return Communicator::allreduce_sum_async(tensor);
  if (tensor.on_device()) {
    return AllreduceHandle(worker_->submit(
        [this, tensor, stream = cuda_stream()] { reduce_on_device(tensor, stream); }));
  }
  return AllreduceHandle(worker_->submit([this, tensor] {
    detail::ordered_allreduce_sum(tensor, comm_, rank_, size_, worker_scratch_);
  }));
}

void MpiCommunicator::allreduce_sum_bucket(std::span<const Tensor> tensors) {
  // The shared-memory window is host memory: device tensors go one by one, in place.
  if (detail::any_on_device(tensors)) require_device_memory();  // refused before any is summed
  if (!shared_ || detail::any_on_device(tensors)) return Communicator::allreduce_sum_bucket(tensors);
  drain();
  shared_->allreduce_sum(tensors);
}

AllreduceHandle MpiCommunicator::allreduce_sum_bucket_async(std::vector<Tensor> tensors) {
  if (!shared_ || !worker_ || detail::any_on_device(tensors)) {
    for (const Tensor& tensor : tensors) {
      if (tensor.on_device()) require_device_memory();  // refused before any rank starts
    }
    return Communicator::allreduce_sum_bucket_async(std::move(tensors));
  }
  return AllreduceHandle(worker_->submit([this, tensors = std::move(tensors)] {
    shared_->allreduce_sum(tensors);
  }));
}

std::size_t MpiCommunicator::shared_memory_piece_bytes() const noexcept {
  return shared_ ? shared_->piece_bytes() : 0;
}

std::uint64_t MpiCommunicator::shared_memory_pieces() const noexcept {
  return shared_ ? shared_->pieces() : 0;
}

void MpiCommunicator::broadcast(std::span<std::byte> bytes, int root) {
  drain();
  constexpr std::size_t kMaxChunk = INT_MAX;  // MPI counts are int
  for (std::size_t offset = 0; offset < bytes.size(); offset += kMaxChunk) {
    const auto chunk = bytes.subspan(offset, std::min(kMaxChunk, bytes.size() - offset));
    DLX_MPI_CHECK(MPI_Bcast(chunk.data(), static_cast<int>(chunk.size()), MPI_BYTE, root, comm_));
  }
}

void MpiCommunicator::barrier() {
  drain();
  DLX_MPI_CHECK(MPI_Barrier(comm_));
}

}  // namespace dlx::comm
