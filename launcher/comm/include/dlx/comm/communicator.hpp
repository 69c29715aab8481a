#pragma once
// The collectives a data-parallel trainer needs, independent of the transport. Backends: NCCL on
// GPUs (comm/nccl_communicator.*, built only with CUDA) and MPI on CPUs (comm/mpi_communicator.*);
// backends.hpp picks one at run time. Every rank must make the same calls in the same order with
// the same sizes (a collective is entered by all ranks). Buffers are host memory; a GPU backend
// stages them through device memory. Failures throw CommError; a backend never hangs silently.
#include <cstddef>
#include <span>
#include <string_view>
#include <type_traits>

namespace dlx::comm {

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual std::string_view name() const noexcept = 0;  // "mpi", "nccl"
  virtual int rank() const noexcept = 0;
  virtual int size() const noexcept = 0;

  // In place: every rank ends with the element-wise sum over all ranks.
  virtual void allreduce_sum(std::span<float> values) = 0;
  virtual void allreduce_sum(std::span<double> values) = 0;
  // In place: every rank ends with `root`'s bytes.
  virtual void broadcast(std::span<std::byte> bytes, int root) = 0;
  virtual void barrier() = 0;

  // Broadcast of any trivially copyable values (a struct, a vector's data()).
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void broadcast(std::span<T> values, int root) {
    broadcast(std::as_writable_bytes(values), root);
  }
};

}  // namespace dlx::comm
