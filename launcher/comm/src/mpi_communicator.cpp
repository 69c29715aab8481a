#include "dlx/comm/mpi_communicator.hpp"

#include <algorithm>
#include <climits>
#include <cstddef>

#include "dlx/comm/mpi_check.hpp"

namespace dlx::comm {

namespace {

// MPI counts are int: large buffers go in chunks of at most INT_MAX elements.
template <class T, class Call>
void in_chunks(std::span<T> values, Call&& call) {
  constexpr std::size_t kMaxChunk = INT_MAX;
  for (std::size_t offset = 0; offset < values.size(); offset += kMaxChunk) {
    auto chunk = values.subspan(offset, std::min(kMaxChunk, values.size() - offset));
    call(chunk.data(), static_cast<int>(chunk.size()));
  }
}

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm parent) {
  DLX_MPI_CHECK(MPI_Comm_dup(parent, &comm_));
  DLX_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  DLX_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  DLX_MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  if (comm_ != MPI_COMM_NULL && MPI_Finalized(&finalized) == MPI_SUCCESS && finalized == 0) {
    MPI_Comm_free(&comm_);
  }
}

void MpiCommunicator::allreduce_sum(std::span<float> values) {
  in_chunks(values, [this](float* data, int count) {
    DLX_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, count, MPI_FLOAT, MPI_SUM, comm_));
  });
}

void MpiCommunicator::allreduce_sum(std::span<double> values) {
  in_chunks(values, [this](double* data, int count) {
    DLX_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, count, MPI_DOUBLE, MPI_SUM, comm_));
  });
}

void MpiCommunicator::broadcast(std::span<std::byte> bytes, int root) {
  in_chunks(bytes, [this, root](std::byte* data, int count) {
    DLX_MPI_CHECK(MPI_Bcast(data, count, MPI_BYTE, root, comm_));
  });
}

void MpiCommunicator::barrier() { DLX_MPI_CHECK(MPI_Barrier(comm_)); }

}  // namespace dlx::comm
