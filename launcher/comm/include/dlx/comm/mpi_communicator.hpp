#pragma once
// The CPU backend: MPI collectives on a private duplicate of the given communicator (so dlx's
// traffic never matches the application's own messages), with MPI_ERRORS_RETURN set on it.
// Sums use a fixed reduction order (ordered_allreduce.hpp). Non-blocking sums run on one
// background thread in call order when MPI provides MPI_THREAD_MULTIPLE, else on the caller.
#include <cstddef>
#include <memory>
#include <vector>

#include <mpi.h>

#include "dlx/comm/communicator.hpp"

namespace dlx::comm {

namespace detail {
class CommWorker;
}

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm parent);  // collective over `parent`
  ~MpiCommunicator() override;

  std::string_view name() const noexcept override { return "mpi"; }
  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  void allreduce_sum(Tensor tensor) override;
  AllreduceHandle allreduce_sum_async(Tensor tensor) override;
  using Communicator::allreduce_sum;
  using Communicator::allreduce_sum_async;
  void broadcast(std::span<std::byte> bytes, int root) override;
  using Communicator::broadcast;
  void barrier() override;

  MPI_Comm handle() const noexcept { return comm_; }
  bool overlaps() const noexcept { return threaded_; }  // async work runs on its own thread

 private:
  void drain();  // waits for outstanding non-blocking work

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  bool threaded_ = false;
  std::vector<std::byte> scratch_;        // used by blocking calls
  std::vector<std::byte> worker_scratch_;  // used by the worker thread
  std::unique_ptr<detail::CommWorker> worker_;  // destroyed before comm_ is freed
};

}  // namespace dlx::comm
