#pragma once
// The CPU backend: MPI collectives on a private duplicate of the given communicator (so dlx's
// traffic never matches the application's own messages), with MPI_ERRORS_RETURN set on it.
#include <mpi.h>

#include "dlx/comm/communicator.hpp"

namespace dlx::comm {

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm parent);  // collective over `parent`
  ~MpiCommunicator() override;

  std::string_view name() const noexcept override { return "mpi"; }
  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  void allreduce_sum(std::span<float> values) override;
  void allreduce_sum(std::span<double> values) override;
  void broadcast(std::span<std::byte> bytes, int root) override;
  using Communicator::broadcast;
  void barrier() override;

  MPI_Comm handle() const noexcept { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace dlx::comm
