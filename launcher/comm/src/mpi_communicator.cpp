// SPDX-License-Identifier: Apache-2.0
#include "dlx/comm/mpi_communicator.hpp"

#include <algorithm>
#include <climits>
#include <cstddef>

#include "comm_worker.hpp"
#include "dlx/comm/mpi_check.hpp"
#include "ordered_allreduce.hpp"
#include "shared_memory_reducer.hpp"

namespace dlx::comm {

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
  int wanted = options.shared_memory_fusion ? 1 : 0, everywhere = 0;
  DLX_MPI_CHECK(MPI_Allreduce(&wanted, &everywhere, 1, MPI_INT, MPI_MIN, comm_));
  if (everywhere == 1) {
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

void MpiCommunicator::allreduce_sum(Tensor tensor) {
  drain();
  detail::ordered_allreduce_sum(tensor, comm_, rank_, size_, scratch_);
}

AllreduceHandle MpiCommunicator::allreduce_sum_async(Tensor tensor) {
  if (!worker_) return Communicator::allreduce_sum_async(tensor);
  return AllreduceHandle(worker_->submit([this, tensor] {
    detail::ordered_allreduce_sum(tensor, comm_, rank_, size_, worker_scratch_);
  }));
}

void MpiCommunicator::allreduce_sum_bucket(std::span<const Tensor> tensors) {
  if (!shared_) return Communicator::allreduce_sum_bucket(tensors);
  drain();
  shared_->allreduce_sum(tensors);
}

AllreduceHandle MpiCommunicator::allreduce_sum_bucket_async(std::vector<Tensor> tensors) {
  if (!shared_ || !worker_) return Communicator::allreduce_sum_bucket_async(std::move(tensors));
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
