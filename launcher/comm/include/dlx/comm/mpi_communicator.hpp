// SPDX-License-Identifier: Apache-2.0
#pragma once
// The CPU backend: MPI collectives on a private duplicate of the given communicator (so dlx's
// traffic never matches the application's own messages), with MPI_ERRORS_RETURN set on it.
// Sums use a fixed reduction order (ordered_allreduce.hpp). Non-blocking sums run on one
// background thread in call order when MPI provides MPI_THREAD_MULTIPLE, else on the caller.
// When every rank shares one node, fusion buckets are summed through an MPI-3 shared-memory
// window (shared_memory_reducer.hpp; MpiOptions / DLX_FUSION_SHM turn it off), with the same
// additions in the same order, so the results are the same bits either way.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <mpi.h>

#include "dlx/comm/communicator.hpp"
#include "dlx/comm/mpi_options.hpp"

namespace dlx::comm {

namespace detail {
class CommWorker;
class SharedMemoryReducer;
}

class MpiCommunicator final : public Communicator {
 public:
  // Collective over `parent`; every rank passes the same options.
  explicit MpiCommunicator(MPI_Comm parent,
                           const MpiOptions& options = mpi_options_from_environment());
  ~MpiCommunicator() override;

  std::string_view name() const noexcept override { return "mpi"; }
  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  void allreduce_sum(Tensor tensor) override;
  AllreduceHandle allreduce_sum_async(Tensor tensor) override;
  using Communicator::allreduce_sum;
  using Communicator::allreduce_sum_async;
  bool sums_buckets() const noexcept override { return shared_ != nullptr; }
  // Only where Open MPI is CUDA-aware on every rank (and dlx has CUDA); else refused, with why.
  bool reduces_device_memory() const noexcept override { return cuda_aware_; }
  void require_device_memory() const override;
  void allreduce_sum_bucket(std::span<const Tensor> tensors) override;
  AllreduceHandle allreduce_sum_bucket_async(std::vector<Tensor> tensors) override;
  void broadcast(std::span<std::byte> bytes, int root) override;
  using Communicator::broadcast;
  void barrier() override;

  MPI_Comm handle() const noexcept { return comm_; }
  bool overlaps() const noexcept { return threaded_; }  // async work runs on its own thread
  // The piece size of the shared-memory path; 0 when buckets go through MPI_Allreduce.
  std::size_t shared_memory_piece_bytes() const noexcept;
  // How many pieces have gone through the shared-memory window so far (0 without it): which
  // tensors took that path, for tests and diagnostics.
  std::uint64_t shared_memory_pieces() const noexcept;

 private:
  void drain();  // waits for outstanding non-blocking work
  void reduce_on_device(Tensor tensor, void* stream);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  bool threaded_ = false;
  bool cuda_aware_ = false;  // agreed by every rank at construction
  std::vector<std::byte> scratch_;        // used by blocking calls
  std::vector<std::byte> worker_scratch_;  // used by the worker thread
  std::unique_ptr<detail::SharedMemoryReducer> shared_;  // null: no shared-memory path
  std::unique_ptr<detail::CommWorker> worker_;  // destroyed first (it may be using shared_)
};

}  // namespace dlx::comm
