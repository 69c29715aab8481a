// SPDX-License-Identifier: Apache-2.0
#include "ordered_allreduce.hpp"

#include <algorithm>
#include <climits>
#include <cstring>

#include "dlx/comm/mpi_check.hpp"

namespace dlx::comm::detail {

namespace {

// At most this many elements per MPI call: every count and displacement stays an int.
constexpr std::size_t kMaxPieceElements = std::size_t{1} << 26;

template <class T>
void sum_in_rank_order(const std::byte* stacked, std::size_t length, int size, std::byte* out) {
  const auto* in = reinterpret_cast<const T*>(stacked);
  auto* result = reinterpret_cast<T*>(out);
  for (std::size_t j = 0; j < length; ++j) {
    T sum = in[j];
    for (int s = 1; s < size; ++s) sum += in[static_cast<std::size_t>(s) * length + j];
    result[j] = sum;
  }
}

void ordered_piece(std::byte* data, std::size_t count, DataType type, MPI_Comm comm, int rank,
                   int size, std::vector<std::byte>& scratch) {
  const std::size_t element = size_of(type);
  const auto n = static_cast<std::size_t>(size);
  std::vector<int> counts(n), displacements(n);
  for (std::size_t r = 0; r < n; ++r) {
    const std::size_t begin = count * r / n;
    const std::size_t end = count * (r + 1) / n;
    counts[r] = static_cast<int>(end - begin);
    displacements[r] = static_cast<int>(begin);
  }
  const auto mine = static_cast<std::size_t>(counts[static_cast<std::size_t>(rank)]);
  std::vector<int> receive_counts(n, static_cast<int>(mine)), receive_displacements(n);
  for (std::size_t s = 0; s < n; ++s) receive_displacements[s] = static_cast<int>(s * mine);
  scratch.resize(std::max(scratch.size(), n * mine * element));
  const MPI_Datatype datatype = mpi_type(type);
  DLX_MPI_CHECK(MPI_Alltoallv(data, counts.data(), displacements.data(), datatype,
                              scratch.data(), receive_counts.data(),
                              receive_displacements.data(), datatype, comm));
  std::byte* own = data + static_cast<std::size_t>(displacements[static_cast<std::size_t>(rank)]) *
                              element;
  if (type == DataType::float32) {
    sum_in_rank_order<float>(scratch.data(), mine, size, own);
  } else {
    sum_in_rank_order<double>(scratch.data(), mine, size, own);
  }
  DLX_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, datatype, data, counts.data(),
                               displacements.data(), datatype, comm));
}

}  // namespace

MPI_Datatype mpi_type(DataType type) {
  switch (type) {
    case DataType::float32: return MPI_FLOAT;
    case DataType::float64: return MPI_DOUBLE;
    case DataType::int32: return MPI_INT32_T;
    case DataType::int64: return MPI_INT64_T;
    case DataType::uint32: return MPI_UINT32_T;
    case DataType::uint64: return MPI_UINT64_T;
  }
  return MPI_DATATYPE_NULL;
}

void ordered_allreduce_sum(Tensor tensor, MPI_Comm comm, int rank, int size,
                           std::vector<std::byte>& scratch) {
  if (tensor.count == 0 || size == 1) return;
  auto* bytes = static_cast<std::byte*>(tensor.data);
  const std::size_t element = size_of(tensor.type);
  const bool plain = size == 2 || !is_floating(tensor.type);
  const std::size_t piece_limit = plain ? static_cast<std::size_t>(INT_MAX) : kMaxPieceElements;
  for (std::size_t offset = 0; offset < tensor.count; offset += piece_limit) {
    const std::size_t piece = std::min(piece_limit, tensor.count - offset);
    std::byte* data = bytes + offset * element;
    if (plain) {
      DLX_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(piece),
                                  mpi_type(tensor.type), MPI_SUM, comm));
    } else {
      ordered_piece(data, piece, tensor.type, comm, rank, size, scratch);
    }
  }
}

}  // namespace dlx::comm::detail
